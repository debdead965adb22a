"""A reopened conversation with its KV cache restored from disk against the same turn cold.

A conversation of about ``--tokens`` tokens is built once and saved (Engine(keep_state=True),
closed). Then, alternating which goes first, a fresh engine answers the next question:
restored (the state on disk) or cold (no state: the whole history is prefilled). Printed: TTFT
medians and their ratio (goal <= 0.15x on this CPU), the state file's size beside the K/V bytes
the planner prints for that many tokens, and save/restore time per 1,000 tokens for f16 and q8_0.

A document of about ``--document-tokens`` tokens (0: skip) is summarized once in one part
(context 8192); then a follow-up question is asked three ways, alternating: in the same engine
(its cells still there), after a restart (the state on disk) and cold. Printed: TTFT medians and
the ratios to cold (goal <= 0.10x).

    .venv/bin/python bench/kv_state.py [--tokens 2000] [--rounds 3] [--threads 2] [--document-tokens 7000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workstation.core.catalog import resolve_model_path  # noqa: E402
from workstation.core.engine import Engine  # noqa: E402
from workstation.core.kv_state import KvStateStore, read_sequence, write_sequence  # noqa: E402
from workstation.core.llama_allocation import kv_cache_per_layer  # noqa: E402
from workstation.core.model_info import read_model_info  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.profiles import Sampling  # noqa: E402
from workstation.core.summarize import summarize_document  # noqa: E402

PARAGRAPH = ("The office moves to the third floor in May. Desks are assigned by team, printers need a "
             "staff card, and the kitchen is shared with the legal department until June. ")
GREEDY = Sampling(temperature=0.0, max_tokens=16, repeat_penalty=1.0)


def profile(threads: int, k: str, v: str, context: int):  # noqa: ANN201
    return profile_from_dict(
        {"name": f"kv-{k}-{v}", "model": "smollm2-135m-instruct-q4_1", "context": context, "threads": threads,
         "gpu_layers": 0, "flash_attn": "on", "kv_cache": {"k": k, "v": v}, "system_prompt": ""},
        "<bench>",
    )


def history(engine: Engine, tokens: int) -> list[dict[str, str]]:
    msgs: list[dict[str, str]] = []
    i = 0
    while len(engine.chat_prompt(msgs + [{"role": "user", "content": "?"}])) < tokens:
        msgs += [{"role": "user", "content": f"Note {i}: " + PARAGRAPH * 3},
                 {"role": "assistant", "content": "Noted."}]
        i += 1
    return msgs


SECTION = ("Section {i}. Penalties for late delivery are {p} percent of the order value per week, "
           "capped at {c} percent. The supplier reports delays in writing within {d} days, and the "
           "buyer may cancel the order after {w} weeks without further cost. ")


def document(engine: Engine, tokens: int) -> str:
    parts: list[str] = []
    i = 0
    while len(engine.core.text_tokens("".join(parts))) < tokens:
        parts.append(SECTION.format(i=i + 1, p=1 + i % 5, c=10 + i % 7, d=3 + i % 4, w=4 + i % 6)
                     + PARAGRAPH)
        i += 1
    return "".join(parts)


def document_follow_up(args: argparse.Namespace) -> None:
    """A follow-up question about a summarized document: same engine, after a restart, cold."""
    prof = profile(args.threads, "f16", "f16", 8192)
    saved = Path(tempfile.mkdtemp(prefix="kv-bench-doc-"))
    ttft: dict[str, list[float]] = {"same engine": [], "restarted": [], "cold": []}
    with Engine(prof, keep_state=True) as eng:
        text = document(eng, args.document_tokens)
        path = saved / "contract.txt"
        path.write_text(text, encoding="utf-8")
        result = summarize_document(eng, path, prof)
        assert result.follow_up, "the document did not fit in one part"
        n_doc = len(eng.chat_prompt(result.follow_up))
        # the summary's cells, saved as the app saves them when another conversation or a
        # restart comes
        folder = saved / "states"
        eng.core.kv_store = KvStateStore(folder)
        eng.core.save_states()
        eng.core.kv_store = None
        ask = [*result.follow_up, {"role": "user", "content": "What does section 3 say about penalties?"}]
        ttft["same engine"].append(eng.run_chat(ask, GREEDY).metrics.ttft_ms)
    copy = Path(tempfile.mkdtemp(prefix="kv-bench-doc-copy-"))
    for r in range(args.rounds):
        for mode in (("restarted", "cold") if r % 2 == 0 else ("cold", "restarted")):
            if mode == "restarted":  # the same saved state every round
                shutil.rmtree(copy)
                shutil.copytree(folder, copy)
            with Engine(prof, keep_state=mode == "restarted") as eng:
                if mode == "restarted":
                    eng.core.kv_store = KvStateStore(copy)
                m = eng.run_chat(ask, GREEDY).metrics
                if mode == "restarted":
                    assert m.restored_n > 0, "nothing was restored"
                ttft[mode].append(m.ttft_ms)
                eng.core.kv_store = None
    med = {k: statistics.median(v) for k, v in ttft.items()}
    print(f"document of {n_doc} tokens with its summary (context 8192, one part), {args.threads} threads, "
          f"{args.rounds} rounds")
    print(f"  follow-up TTFT: same engine {med['same engine']:.0f} ms ({med['same engine'] / med['cold']:.3f}x), "
          f"after a restart {med['restarted']:.0f} ms ({med['restarted'] / med['cold']:.3f}x), "
          f"cold {med['cold']:.0f} ms (goal <= 0.10x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--document-tokens", type=int, default=7000)
    ap.add_argument("--skip-conversation", action="store_true")
    args = ap.parse_args()
    if args.document_tokens:
        os.environ["WORKSTATION_DATA"] = tempfile.mkdtemp(prefix="kv-bench-")
        document_follow_up(args)
    if args.skip_conversation:
        return
    context = max(4096, args.tokens * 2)
    os.environ["WORKSTATION_DATA"] = tempfile.mkdtemp(prefix="kv-bench-")
    prof = profile(args.threads, "f16", "f16", context)
    with Engine(prof, keep_state=True) as eng:
        msgs = history(eng, args.tokens)
        question = [*msgs, {"role": "user", "content": "Where does the office move?"}]
        n_history = len(eng.chat_prompt(msgs))
        eng.run_chat(question, GREEDY)  # computes and (on close) saves the conversation
    ttft: dict[str, list[float]] = {"restored": [], "cold": []}
    follow = [*question, {"role": "assistant", "content": "To the third floor."},
              {"role": "user", "content": "And the printers?"}]
    for r in range(args.rounds):
        for mode in (("restored", "cold") if r % 2 == 0 else ("cold", "restored")):
            with Engine(prof, keep_state=mode == "restored") as eng:
                m = eng.run_chat(follow, GREEDY).metrics
                if mode == "restored":
                    assert m.restored_n > 0, "nothing was restored"
                ttft[mode].append(m.ttft_ms)
                eng.core.kv_store = None  # do not save this round's state
    med = {k: statistics.median(v) for k, v in ttft.items()}
    print(f"conversation of {n_history} tokens, context {context}, {args.threads} threads, {args.rounds} rounds")
    print(f"  TTFT restored {med['restored']:.0f} ms, cold {med['cold']:.0f} ms: "
          f"{med['restored'] / med['cold']:.3f}x (goal <= 0.15x)")

    info = read_model_info(resolve_model_path("smollm2-135m-instruct-q4_1"))
    for k, v in (("f16", "f16"), ("q8_0", "q8_0")):
        with Engine(profile(args.threads, k, v, context)) as eng:
            eng.run_chat(question, Sampling(temperature=0.0, max_tokens=1, repeat_penalty=1.0))
            n = len(eng.tokens)
            t0 = time.perf_counter()
            data = read_sequence(eng.model, 0)
            t_save = time.perf_counter() - t0
            t0 = time.perf_counter()
            ok = write_sequence(eng.model, 0, data)
            t_load = time.perf_counter() - t0
            k_bytes, v_bytes = eng.model.kv_cache_bytes
            per_token = (k_bytes + v_bytes) / eng.model.n_ctx
            planned = sum(kv_cache_per_layer(info, 256, k, v)) / 256  # the planner's bytes a token
            store = KvStateStore(Path(tempfile.mkdtemp()))
            t0 = time.perf_counter()
            store.save(eng.core.state_key, list(eng.tokens), data)
            t_file = time.perf_counter() - t0
        print(f"  K/V {k}/{v}: {n} tokens, state {len(data) / 2**20:.2f} MiB against llama.cpp's K/V "
              f"{per_token * n / 2**20:.2f} MiB and the planner's {planned * n / 2**20:.2f} MiB for as many "
              f"cells ({info.n_layer} layers); "
              f"serialize {t_save * 1e6 / n:.0f} us, restore {t_load * 1e6 / n:.0f} us, "
              f"write the file {t_file * 1e6 / n:.0f} us per token ({'ok' if ok else 'FAILED'})")


if __name__ == "__main__":
    main()
