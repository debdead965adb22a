"""Our KL divergence beside llama.cpp's ``llama-perplexity --kl-divergence`` on the same text,
windows and models, plus what the reference cache costs.

Usage:
    .venv/bin/python bench/kld.py [--bin DIR] [--reference MODEL] [--candidate MODEL]
                                  [--text FILE] [--ctx 512] [--chunks 4] [--threads 2] [--exact]

Defaults: reference = the packaged SmolLM2-135M-Instruct Q4_1, candidate = its Q4_0 requantized
copy (made beside it when missing), text = fixed stdlib docstrings (bench/texts.py). DIR holds
llama-perplexity built from the llama.cpp that llama-cpp-python vendors
(``/work/shared/tools/llama-anchors`` prints it; see bench/anchors.py for the default).

Printed, each as ours / llama.cpp's ratio (both are deterministic; the issue asks for 1 within
1%): mean KLD, 99th-percentile KLD, same-top %, PPL(Q) and PPL(base); that the token windows
are identical (llama.cpp's base file holds its tokens); the time of the candidate pass over
the reference pass (ours); and the size per 1,000 text tokens of our cache and of llama.cpp's
base file. ``--exact`` also sums the KLD over the whole vocabulary in numpy, to show what
keeping only the top-k log-probabilities changes.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench.anchors import default_bin  # noqa: E402
from bench.texts import stdlib_doc_text  # noqa: E402
from workstation.core.catalog import resolve_model_path  # noqa: E402
from workstation.core.evaluate import read_text  # noqa: E402
from workstation.core.kld import (  # noqa: E402
    DEFAULT_TOP_K,
    build_reference,
    compare_to_reference,
    log_softmax,
    reference_key,
)
from workstation.core.quantize import quantize_model  # noqa: E402
from workstation.core.runtime import LoadedModel, RuntimeSettings  # noqa: E402

MODEL = "smollm2-135m-instruct-q4_1"

_FIGURES = {
    "kld_mean": r"Mean\s+KLD:\s+([-\d.]+)",
    "kld_p99": r"99\.0%\s+KLD:\s+([-\d.]+)",
    "same_top": r"Same top p:\s+([-\d.]+)",
    "ppl": r"Mean PPL\(Q\)\s+:\s+([-\d.]+)",
    "ref_ppl": r"Mean PPL\(base\)\s+:\s+([-\d.]+)",
}


def llama_kld(bin_dir: Path, ref: Path, cand: Path, text: Path, base: Path, ctx: int, chunks: int,
              threads: int) -> tuple[dict[str, float], float, float]:
    """llama-perplexity's base pass then its KLD pass; (figures, base seconds, KLD seconds)."""
    common = ["-c", str(ctx), "-b", str(ctx), "--chunks", str(chunks), "-t", str(threads), "-fa", "on"]
    exe = str(bin_dir / "llama-perplexity")
    t0 = time.perf_counter()
    subprocess.run([exe, "-m", str(ref), "-f", str(text), "--kl-divergence-base", str(base), *common],
                   capture_output=True, text=True, check=True)
    t1 = time.perf_counter()
    proc = subprocess.run([exe, "-m", str(cand), "--kl-divergence-base", str(base), "--kl-divergence", *common],
                          capture_output=True, text=True, check=True)
    t2 = time.perf_counter()
    out = proc.stdout + proc.stderr
    figures = {}
    for name, pattern in _FIGURES.items():
        m = re.search(pattern, out)
        if not m:
            raise SystemExit(f"llama-perplexity printed no {name}:\n" + out[-3000:])
        figures[name] = float(m.group(1))
    figures["same_top"] /= 100
    return figures, t1 - t0, t2 - t1


def llama_base_tokens(base: Path) -> np.ndarray:
    """The tokens llama-perplexity evaluated, from its base file's header."""
    with base.open("rb") as f:
        assert f.read(8) == b"_logits_"
        n_ctx, n_vocab, n_chunk = np.frombuffer(f.read(12), dtype="<i4")
        return np.frombuffer(f.read(4 * int(n_ctx) * int(n_chunk)), dtype="<i4")


def exact_kld(ref: LoadedModel, cand: LoadedModel, tokens: list[int], ctx: int, chunks: int) -> float:
    """Mean KLD summed over the whole vocabulary (float64), the same windows."""
    from contextlib import closing

    from workstation.core.evaluate import scored_logits

    kept: list[np.ndarray] = []
    with closing(scored_logits(ref, tokens, ctx, chunks)) as windows:
        for rows in windows:
            kept.append(log_softmax(rows.logits))
    values = []
    with closing(scored_logits(cand, tokens, ctx, chunks)) as windows:
        for rows, lp in zip(windows, kept, strict=True):
            lq = log_softmax(rows.logits)
            values.append((np.exp(lp) * (lp - lq)).sum(axis=1))
    return float(np.concatenate(values).mean())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", type=Path, default=default_bin())
    ap.add_argument("--reference", default=MODEL)
    ap.add_argument("--candidate")
    ap.add_argument("--text", type=Path)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--top-k", type=int, default=DEFAULT_TOP_K)
    ap.add_argument("--exact", action="store_true", help="also sum the KLD over the whole vocabulary")
    args = ap.parse_args()

    ref_path = resolve_model_path(args.reference)
    if args.candidate:
        cand_path = resolve_model_path(args.candidate)
    else:
        cand_path = ref_path.with_name(ref_path.name.replace("Q4_1", "Q4_0"))
        if cand_path == ref_path:
            cand_path = ref_path.with_name(ref_path.stem + ".Q4_0.gguf")
        if not cand_path.exists():
            quantize_model(ref_path, cand_path, "q4_0", allow_requantize=True)
    with tempfile.TemporaryDirectory() as tmp:
        text_file = args.text or Path(tmp) / "text.txt"
        if args.text is None:
            text_file.write_text(stdlib_doc_text(), encoding="utf-8")
        text = read_text(text_file)  # what llama-perplexity -f reads: one trailing newline dropped
        print(f"reference {ref_path.name}, candidate {cand_path.name}, text {text_file.name} "
              f"({len(text):,} chars), ctx {args.ctx}, {args.chunks} windows, {args.threads} threads, "
              f"top-k {args.top_k}")

        settings = RuntimeSettings(n_ctx=args.ctx, n_threads=args.threads, flash_attn=True, n_batch=args.ctx)
        ref_model = LoadedModel(ref_path, settings)
        cand_model = LoadedModel(cand_path, settings)
        try:
            key = reference_key(ref_path, ("f16", "f16"), text, args.ctx, args.chunks, args.top_k)
            ref = build_reference(ref_model, text, key, Path(tmp) / "cache")
            ours = compare_to_reference(cand_model, ref, text_file.name)
            exact = exact_kld(ref_model, cand_model, ref.tokens.tolist(), args.ctx, args.chunks) if args.exact else None
        finally:
            ref_model.close()
            cand_model.close()

        n_tokens = args.ctx * ours.n_chunks
        print(f"ours: reference pass {ours.ref_seconds:.2f} s, candidate pass {ours.seconds:.2f} s "
              f"(candidate / reference {ours.seconds / ours.ref_seconds:.3f}; llama_decode alone "
              f"{ours.decode_seconds / ours.ref_decode_seconds:.3f}); cache "
              f"{ours.cache_bytes / 2**20:.2f} MiB = {ours.cache_bytes_per_1k_tokens / 2**10:.1f} KiB per 1,000 tokens")
        if exact is not None:
            print(f"top-{args.top_k} + rest mean KLD {ours.kld_mean:.6f} vs whole vocabulary {exact:.6f}: "
                  f"ratio {ours.kld_mean / exact:.5f}")
        have_bin = (args.bin / "llama-perplexity").exists()
        if not have_bin:
            print(f"llama-perplexity not found in {args.bin}: only our figures")
            for name in _FIGURES:
                print(f"  {name:<9} {getattr(ours, name):.6f}")
            return 0
        base = Path(tmp) / "base.kld"
        theirs, t_base, t_kld = llama_kld(args.bin, ref_path, cand_path, text_file, base, args.ctx, args.chunks,
                                          args.threads)
        same_tokens = np.array_equal(llama_base_tokens(base), ref.tokens)
        print(f"llama-perplexity: base pass {t_base:.2f} s, KLD pass {t_kld:.2f} s (whole process each); base "
              f"file {base.stat().st_size / 2**20:.2f} MiB = {base.stat().st_size / n_tokens * 1000 / 2**10:.1f} "
              f"KiB per 1,000 tokens")
        print(f"identical token windows: {'yes' if same_tokens else 'NO'}")
        worst = 0.0
        for name in _FIGURES:
            a, b = getattr(ours, name), theirs[name]
            ratio = a / b if b else float("nan")
            worst = max(worst, abs(ratio - 1))
            print(f"  {name:<9} ours {a:.6f}  llama.cpp {b:.6f}  ratio {ratio:.5f}")
        print(f"largest difference {worst * 100:.3f}% ({'within' if worst <= 0.01 else 'OUTSIDE'} 1%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
