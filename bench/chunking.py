"""How long a summary's chunking takes for a text on one line, over the same words in paragraphs.

A text with no line breaks is cut into words (there is no paragraph, line or sentence to cut
at); each chunk grew a word at a time, measured again for each word, so a 3 MB file sat at
"reading and measuring…" for minutes. This measures, side by side in one run, the chunking of
the same words written on one line and in paragraphs: the token counts asked and the time, and
the ratio of the two.

Usage: .venv/bin/python bench/chunking.py [--words N] [--context N] [--model PATH]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workstation.core.documents import Document  # noqa: E402
from workstation.core.engine import Engine  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.summarize import Runner  # noqa: E402
from workstation.core.summary_chunks import make_chunks  # noqa: E402
from workstation.core.summary_options import SummarizeOptions  # noqa: E402


class Counting(Runner):
    measured = 0

    def count(self, messages: list) -> int:  # type: ignore[type-arg]
        Counting.measured += 1
        return super().count(messages)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=20_000)
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--model", default=str(ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    args = ap.parse_args()
    rng = random.Random(0)
    vocab = "the quarterly report shows revenue growth in every region".split()
    words = [rng.choice(vocab) for _ in range(args.words)]
    one_line = " ".join(words)
    paragraphs = "\n\n".join(" ".join(words[i:i + 60]) + "." for i in range(0, len(words), 60))
    profile = profile_from_dict({"name": "bench", "model": args.model, "context": args.context, "threads": 2,
                                 "system_prompt": ""}, "<bench>")
    engine = Engine(profile)
    rows = []
    try:
        for name, text in (("one line", one_line), ("paragraphs", paragraphs)):
            Counting.measured = 0
            t0 = time.perf_counter()
            chunks = make_chunks(Counting(engine, None), Document("x.txt", "text", text), args.context, 256,
                                 SummarizeOptions())[0]
            rows.append((name, len(text), len(chunks), Counting.measured, time.perf_counter() - t0))
    finally:
        engine.close()
    for name, chars, n, counts, secs in rows:
        print(f"{name:<11} {chars:>10,} chars  {n:>4} chunks  {counts:>5} counts ({counts / n:.1f} a chunk)  {secs:6.1f} s")
    print(f"one line over paragraphs: {rows[0][4] / rows[1][4]:.2f}x the time, {rows[0][3] / rows[1][3]:.2f}x the counts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
