"""Whether a summary's last step copies the labels of the parts' summaries into the summary.

The reduce prompt gave the parts' summaries as "Part 1: …", "Part 2: …"; a first user found
"Part 3: The goal of this text…" in the summary of a document read in 2 parts. This runs the
reduce prompt (``REDUCE_INSTRUCTION`` … ``REDUCE_SUFFIX``) over three sets of office parts'
summaries, greedy, with the labels and as the product sends it now (``reduce_body``:
paragraphs), and counts the summaries that carry a "Part N" label or a "Title:" side by side.

    .venv/bin/python bench/reduce_labels.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workstation.core.summarize import REDUCE_INSTRUCTION, REDUCE_SUFFIX, PartSummary, reduce_body  # noqa: E402

PARTS = [
    ["Title: Enhancing Business Success. The report explains how the sales team grew revenue by 12% in the third "
     "quarter through new clients in Izmir and Ankara.",
     "The second half lists risks: rising costs of shipping, two staff leaving, and a late supplier. It recommends "
     "hiring one person and renegotiating the supplier contract."],
    ["The letter from the landlord says the rent of the office rises from 1 March by 8%, and the heating will be "
     "repaired in February.",
     "It asks the tenant to confirm by 15 February and to allow the technician in on a weekday morning."],
    ["Minutes of the Monday meeting: the team agreed to move the launch to April because the printer's delivery is "
     "late.",
     "Action items: Ayse writes to the printer, Mehmet updates the website, and the budget is reviewed next week."],
]
LABEL = re.compile(r"\bPart \d|Title:")


def labelled(texts: list[str]) -> str:
    """The body as it was sent before: "Part 1: …" a line."""
    return "\n".join(f"Part {i}: {text}" for i, text in enumerate(texts, 1))


def paragraphs(texts: list[str]) -> str:
    return reduce_body([PartSummary(i, i + 1, text) for i, text in enumerate(texts)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    from llama_cpp import Llama

    llm = Llama(args.model, n_ctx=2048, n_threads=args.threads, verbose=False)
    counts = {}
    for name, body in (("labelled 'Part N:'", labelled), ("paragraphs (now)", paragraphs)):
        leaks = 0
        for texts in PARTS:
            messages = [{"role": "user", "content": REDUCE_INSTRUCTION + body(texts) + REDUCE_SUFFIX}]
            reply = llm.create_chat_completion(messages, temperature=0, max_tokens=150)
            text = str(reply["choices"][0]["message"]["content"])
            leaked = bool(LABEL.search(text))
            leaks += leaked
            print(f"{name:<20} {'LABEL' if leaked else 'clean'}  {text[:110]!r}")
        counts[name] = leaks
    for name, leaks in counts.items():
        print(f"{name}: {leaks} of {len(PARTS)} summaries carry a label")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
