"""How often is greedy text with speculation different from greedy text without it?

Prompt lookup drafting every step (no adaptive policy), on the speculative bench's quoting,
hard-wrapped quoting and summarizing prompts, each turn compared with plain decoding of the
same prompt, for each thread count. A difference is not a verification error: llama.cpp's CPU
backend computes a one-token step differently with 2+ threads than a batch of tokens (a batch
and 1 thread agree bit for bit), so a near-tie can go the other way (llama.cpp issues 4479,
3014). With 1 thread the texts are equal.

    .venv/bin/python bench/greedy_equality.py [--threads 1,2] [--rounds 3] [--tokens 64]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import speculative as prompts  # noqa: E402

from workstation.core.engine import Engine  # noqa: E402
from workstation.core.packaged_models import ensure  # noqa: E402
from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings  # noqa: E402
from workstation.core.speculative import SlotSpeculator  # noqa: E402


def one_token_vs_batch(model: Path, threads: int) -> float:
    """Largest logit difference between four one-token steps and one batch of the same four."""
    m = LoadedModel(model, RuntimeSettings(n_ctx=1024, n_threads=threads))
    b = Batch(512)
    try:
        toks = m.tokenize(prompts.QUOTE)[:300]
        out = []
        for step in (1, 4):
            m.clear_memory()
            b.clear()
            for j, t in enumerate(toks[:-4]):
                b.add(t, j, 0, False)
            m.decode(b)
            for start in range(len(toks) - 4, len(toks), step):
                b.clear()
                for j in range(start, start + step):
                    b.add(toks[j], j, 0, j == len(toks) - 1)
                m.decode(b)
            out.append(m.logits(-1).copy())
        return float(np.abs(out[0] - out[1]).max())
    finally:
        b.close()
        m.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    model = ensure("smollm2-135m-instruct-q4_1")
    texts = {"quoting": prompts.QUOTE, "quoting hard-wrapped": prompts.QUOTE_WRAPPED, "summarizing": prompts.SUMMARIZE}
    print(f"{'threads':>7} {'turns differing':>16} {'max |logit diff|, 4 one-token steps vs 1 batch of 4':>52}")
    for threads in [int(x) for x in args.threads.split(",")]:
        prompts.THREADS = threads
        plain = Engine(prompts.profile(model, {"mode": "off"}, args.tokens))
        lookup = Engine(prompts.profile(model, {"mode": "lookup", "draft_tokens": 4}, args.tokens))
        assert isinstance(lookup.decoder, SlotSpeculator)
        lookup.decoder.adaptive = False  # draft every step: the most batches
        differ = turns = 0
        try:
            for r in range(args.rounds):
                for text in texts.values():
                    msgs = [{"role": "user", "content": f"(Request {r + 1}.) {text}"}]
                    plain.reset()
                    lookup.reset()
                    differ += plain.run_chat(msgs).text != lookup.run_chat(msgs).text
                    turns += 1
        finally:
            plain.close()
            lookup.close()
        print(f"{threads:>7} {f'{differ} of {turns}':>16} {one_token_vs_batch(model, threads):>52.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
