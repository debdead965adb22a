"""Speculative decoding, measured side by side in one run: ratios with it on against off.

Usage:
    .venv/bin/python bench/speculative.py [--runs 3] [--tokens 128] [--threads 2] [--skip-library]

Configurations, interleaved round by round (order rotating), medians reported:

* (a) prompt lookup on SmolLM2 Q4_1: quoting a long pasted memo (paragraphs on one line, as
  pasted from a document; and hard-wrapped, as pasted from a plain-text email), and
  summarizing it;
* (b) the draft pair on free writing: target SmolLM2 F16 (a copy made with llama.cpp's
  quantizer, cached under models/), draft SmolLM2 Q4_1; adaptive (the profile as a user runs
  it) and forced (draft_tokens every step, the raw cost of drafting on this machine);
* llama-cpp-python's own ``LlamaPromptLookupDecoding`` (which forces logits_all) and its plain
  ``Llama`` on the quoting task, same prompt tokens, greedy.

Each round prefixes the user message with its number so neither the target's nor the draft's
KV cache can reuse an earlier round (TTFT includes the whole prefill every time).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.anchors import default_bin  # noqa: E402
from workstation.core.engine import Engine  # noqa: E402
from workstation.core.metrics import draft_acceptance  # noqa: E402
from workstation.core.packaged_models import ensure  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.quantize import quantize_model  # noqa: E402
from workstation.core.speculative import SlotSpeculator  # noqa: E402

MEMO = """\
To: All staff
From: Office Manager
Subject: Changes to the office from the first of next month

Dear colleagues,

Following the review of our premises and working arrangements that took place over the summer,
the management team has agreed a number of changes that will take effect from the first of next
month. Please read this memo carefully, because several of the changes affect how you book
rooms, claim expenses and use the shared equipment.

First, the meeting rooms on the second floor will be booked through the new calendar system
only. Paper booking sheets will be removed from the doors. Bookings longer than two hours need
the approval of a team leader, and rooms that are not used within fifteen minutes of the start
of a booking will be released automatically.

Second, travel expenses must be submitted within thirty days of the journey, with receipts
attached as scanned copies. The travel allowance rises by five percent, and the mileage rate
for private cars stays the same. Claims submitted after thirty days will be paid only with the
written agreement of the finance director.

Third, the printers on each floor will require your staff card. Print jobs that are not
collected within one day will be deleted. Colour printing is limited to fifty pages a month per
person unless your department has agreed a higher limit with the office manager.

Fourth, the kitchen on the ground floor will be refurbished during the second and third weeks of
the month. During that time, please use the kitchen on the first floor, and take care to clean
up after yourself, as it will be shared by twice as many people as usual.

Finally, the annual staff meeting moves from Leeds to York and will be held on the last Friday
of the month. Travel to York will be paid in the usual way. Please tell your team leader by the
end of next week whether you will attend, and whether you have any dietary requirements.

Thank you for your patience while these changes are introduced.

Kind regards,
The Office Manager
"""

# the same memo as pasted from a document: each paragraph on one line (the memo above is
# hard-wrapped like a plain-text email, which the model re-wraps as it copies)
MEMO_PARAGRAPHS = re.sub(r"(?<=[^\n]{60})\n(?!\n)", " ", MEMO)
QUOTE = "Copy the following memo exactly, word for word, without any changes:\n\n" + MEMO_PARAGRAPHS
QUOTE_WRAPPED = "Copy the following memo exactly, word for word, without any changes:\n\n" + MEMO
SUMMARIZE = "Summarize the following memo for a colleague who missed it:\n\n" + MEMO
FREE = "Write a short story about a lighthouse keeper who finds a message in a bottle."
# little to copy: speculation that does not pay must cost nothing here
COUNT = "Count from 1 to 100, one number per line, and say nothing else."
SHORT = "Give three tips for writing a polite e-mail to a customer who paid late."


@dataclass
class Series:
    tps: list[float] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)
    drafted: int = 0
    accepted: int = 0
    tokens: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def med_tps(self) -> float:
        return statistics.median(self.tps) if self.tps else float("nan")

    def med_ttft(self) -> float:
        return statistics.median(self.ttft) if self.ttft else float("nan")


THREADS = 2


def profile(model: Path, spec: dict[str, Any], tokens: int) -> Any:
    return profile_from_dict(
        {
            "name": "bench",
            "model": str(model),
            "context": 2048,
            "threads": THREADS,
            "gpu_layers": 0,
            "speculative": spec,
            "sampling": {"temperature": 0.0, "max_tokens": tokens, "repeat_penalty": 1.0},
            "system_prompt": "",
        },
        "<bench profile>",
    )


def run_engine(eng: Engine, text: str, series: Series) -> None:
    eng.reset()
    final = eng.run_chat([{"role": "user", "content": text}])
    m = final.metrics
    series.tps.append(m.predicted_per_second)
    series.ttft.append(m.ttft_ms)
    series.drafted += m.draft_n
    series.accepted += m.draft_n_accepted
    series.tokens.append(m.predicted_n)
    series.texts.append(final.text)


def run_library(llm: Any, prompt: list[int], tokens: int, series: Series) -> None:
    """llama-cpp-python's own generate loop: TTFT to the first token, then decode tok/s."""
    llm.reset()
    t0 = time.perf_counter()
    first = last = 0.0
    n = 0
    for chunk in llm.create_completion(
        prompt, max_tokens=tokens, temperature=0.0, repeat_penalty=1.0, stream=True
    ):
        now = time.perf_counter()
        if n == 0:
            first = now
        last = now
        n += 1
        del chunk
    series.ttft.append((first - t0) * 1000)
    series.tps.append((n - 1) / (last - first) if n > 1 and last > first else float("nan"))
    series.tokens.append(n)


def run_speculative_simple(bin_dir: Path, model: Path, prompt_text: str, tokens: int, series: Series) -> None:
    """llama.cpp's own ``llama-speculative-simple --spec-type ngram-mod`` on the same prompt text
    (the chat template already applied), greedy: its decode speed and draft counts."""
    import subprocess

    cmd = [str(bin_dir / "llama-speculative-simple"), "-m", str(model), "-p", prompt_text, "-n", str(tokens),
           "-t", str(THREADS), "-fa", "on", "--spec-type", "ngram-mod", "--temp", "0", "-c", "2048"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stderr
    speed = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+)", out)
    if not speed:
        raise SystemExit("llama-speculative-simple gave no figures:\n" + out[-2000:])
    series.tps.append(float(speed.group(3)))
    series.ttft.append(float("nan"))
    series.tokens.append(int(speed.group(1)))
    drafted = re.search(r"n_drafted\s*=\s*(\d+)", out)
    accepted = re.search(r"n_accept\s*=\s*(\d+)", out)
    series.drafted += int(drafted.group(1)) if drafted else 0
    series.accepted += int(accepted.group(1)) if accepted else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--draft-tokens", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-library", action="store_true", help="leave out llama-cpp-python's loop")
    ap.add_argument("--bin", type=Path, default=default_bin(), help="folder with llama-speculative-simple")
    args = ap.parse_args()
    global THREADS
    THREADS = args.threads

    q4 = ensure("smollm2-135m-instruct-q4_1")
    f16 = q4.with_name("SmolLM2-135M-Instruct.F16.gguf")
    if not f16.exists():
        quantize_model(q4, f16, "f16", allow_requantize=True)

    n = args.tokens
    k = args.draft_tokens
    engines: dict[str, Engine] = {
        "off Q4_1": Engine(profile(q4, {"mode": "off"}, n)),
        "lookup Q4_1": Engine(profile(q4, {"mode": "lookup", "draft_tokens": k}, n)),
        "off F16": Engine(profile(f16, {"mode": "off"}, n)),
        "draft F16<-Q4_1": Engine(profile(f16, {"mode": "draft", "draft_model": str(q4), "draft_tokens": k}, n)),
        "draft forced": Engine(profile(f16, {"mode": "draft", "draft_model": str(q4), "draft_tokens": 4}, n)),
    }
    forced = engines["draft forced"].decoder
    assert isinstance(forced, SlotSpeculator)
    forced.adaptive = False

    library: dict[str, Any] = {}
    if not args.skip_library:
        from llama_cpp import Llama
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        common = {"model_path": str(q4), "n_ctx": 2048, "n_threads": THREADS, "n_threads_batch": THREADS,
                  "n_gpu_layers": 0, "flash_attn": True, "verbose": False}
        library["library plain"] = Llama(**common)
        library["library lookup"] = Llama(
            **common, logits_all=True,  # its draft path needs it (n_batch rows overflow otherwise)
            draft_model=LlamaPromptLookupDecoding(max_ngram_size=3, num_pred_tokens=k)
        )

    tasks: list[tuple[str, str, str]] = [  # (series name, engine/library key, prompt)
        ("quote off", "off Q4_1", QUOTE),
        ("quote lookup", "lookup Q4_1", QUOTE),
        ("quote wrapped off", "off Q4_1", QUOTE_WRAPPED),
        ("quote wrapped lookup", "lookup Q4_1", QUOTE_WRAPPED),
        ("summarize off", "off Q4_1", SUMMARIZE),
        ("summarize lookup", "lookup Q4_1", SUMMARIZE),
        ("count off", "off Q4_1", COUNT),
        ("count lookup", "lookup Q4_1", COUNT),
        ("tips off", "off Q4_1", SHORT),
        ("tips lookup", "lookup Q4_1", SHORT),
        ("free off F16", "off F16", FREE),
        ("free draft (adaptive)", "draft F16<-Q4_1", FREE),
        ("free draft (forced k=4)", "draft forced", FREE),
    ]
    if library:
        tasks += [("quote library plain", "library plain", QUOTE), ("quote library lookup", "library lookup", QUOTE)]
    have_simple = (args.bin / "llama-speculative-simple").exists()
    if have_simple:
        tasks.append(("quote llama ngram-mod", "llama ngram-mod", QUOTE))
    series = {name: Series() for name, _, _ in tasks}
    chat_tokens = engines["off Q4_1"].chat_prompt
    template = engines["off Q4_1"].core.template

    for r in range(args.runs):
        order = tasks[r % len(tasks) :] + tasks[: r % len(tasks)]
        for name, key, text in order:
            text_r = f"(Request {r + 1}.) {text}"
            t0 = time.perf_counter()
            if key in engines:
                run_engine(engines[key], text_r, series[name])
            elif key == "llama ngram-mod":
                prompt_text = template.render([{"role": "user", "content": text_r}], True)
                run_speculative_simple(args.bin, q4, prompt_text, n, series[name])
            else:
                prompt = chat_tokens([{"role": "user", "content": text_r}])
                run_library(library[key], prompt, n, series[name])
            print(
                f"  round {r + 1}: {name:<26} {series[name].tps[-1]:7.1f} tok/s  "
                f"TTFT {series[name].ttft[-1]:7.0f} ms  ({time.perf_counter() - t0:.1f} s)",
                flush=True,
            )

    def ratio(a: str, b: str, what: Callable[[Series], float]) -> str:
        if a not in series or b not in series:
            return "-"
        return f"{what(series[a]) / what(series[b]):.2f}x"

    def acc(name: str) -> str:
        s = series[name]
        rate = draft_acceptance(s.accepted, s.drafted)
        return f"{s.accepted}/{s.drafted} ({rate:.0%})" if rate is not None else "-"

    print()
    print(f"{'configuration':<26} {'decode tok/s':>12} {'TTFT ms':>9} {'tokens':>7}  acceptance")
    for name in series:
        s = series[name]
        print(f"{name:<26} {s.med_tps():12.1f} {s.med_ttft():9.0f} {statistics.median(s.tokens):7.0f}  {acc(name)}")
    print()
    print(f"{'ratio (medians)':<44} {'decode':>8} {'TTFT':>8} {'paired':>8}")
    rows = [
        ("(a) lookup / off, quoting", "quote lookup", "quote off"),
        ("(a) lookup / off, quoting hard-wrapped text", "quote wrapped lookup", "quote wrapped off"),
        ("(a) lookup / off, summarizing", "summarize lookup", "summarize off"),
        ("(a) lookup / off, counting (little to copy)", "count lookup", "count off"),
        ("(a) lookup / off, tips (little to copy)", "tips lookup", "tips off"),
        ("(b) draft adaptive / off, free writing", "free draft (adaptive)", "free off F16"),
        ("(b) draft forced k=4 / off, free writing", "free draft (forced k=4)", "free off F16"),
        ("ours lookup / llama-speculative-simple ngram-mod", "quote lookup", "quote llama ngram-mod"),
        ("ours lookup / library lookup, quoting", "quote lookup", "quote library lookup"),
        ("library lookup / library plain, quoting", "quote library lookup", "quote library plain"),
        ("our plain / library plain, quoting", "quote off", "quote library plain"),
    ]
    def paired(a: str, b: str) -> str:
        """Median over rounds of a/b within the round: robust to the machine's drift."""
        if a not in series or b not in series:
            return "-"
        pairs = [x / y for x, y in zip(series[a].tps, series[b].tps, strict=True) if y]
        return f"{statistics.median(pairs):.2f}x" if pairs else "-"

    for label, a, b in rows:
        print(f"{label:<44} {ratio(a, b, Series.med_tps):>8} {ratio(a, b, Series.med_ttft):>8} {paired(a, b):>8}")
    same = [
        (a, b) for _, a, b in rows[:5] if series[a].texts and len(series[a].texts) == len(series[b].texts)
    ]
    flips = sum(x != y for a, b in same for x, y in zip(series[a].texts, series[b].texts, strict=True))
    turns = sum(len(series[a].texts) for a, _ in same)
    print(f"greedy lookup text differs from plain decoding in {flips} of {turns} turns "
          "(a near-tie decided differently by a batch of k+1 tokens than by one token)")
    first = series["free draft (adaptive)"].tps[0] / series["free off F16"].tps[0]
    print(f"(b) draft adaptive / off, round 1 only (includes the probe)  {first:.2f}x")
    dec = engines["draft F16<-Q4_1"].decoder
    if isinstance(dec, SlotSpeculator):
        st = dec.stats()
        print(f"draft pair decision: {'off for the session: ' + str(st['off_reason']) if st['off_for_session'] else 'drafting'}")
    lk = engines["lookup Q4_1"].decoder
    if isinstance(lk, SlotSpeculator):
        print("lookup measurements: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in lk.stats().items()))
    for eng in engines.values():
        eng.close()


if __name__ == "__main__":
    main()
