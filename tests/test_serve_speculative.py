"""``serve`` with a speculative profile speculates per slot, and keeps plain greedy text.

At 1 thread llama.cpp's CPU backend computes a batch of k+1 tokens of one sequence bit for bit
like single tokens, so the served text must equal plain decoding in this process.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from conftest import make_profile
from serve_helpers import serve, write_profile

from workstation.core.engine import Engine
from workstation.core.profile_check import profile_from_dict
from workstation.core.profiles import Sampling
from workstation.core.remote import RemoteEngine

PASTE = (
    "The committee met on Tuesday to review the budget for the coming year. It agreed to raise "
    "the travel allowance by five percent, to freeze hiring until March, and to move the annual "
    "meeting from Leeds to York. Members asked the treasurer to publish the accounts monthly."
)
QUOTE = [{"role": "user", "content": "Repeat this text exactly, word for word:\n\n" + PASTE}]


def test_speculative_serve_drafts_and_gives_the_plain_greedy_text(smollm2_path: Path, tmp_path: Path) -> None:
    path = write_profile(tmp_path, smollm2_path, speculative={"mode": "lookup", "draft_tokens": 8})
    with serve(path, "--parallel", "1") as srv:
        # a desk PC on this server: its F5 said "no speculative decoding"; the server's drafts now
        # (the first turn: its costs not measured yet, the slot drafts; a later one's measured on
        # a busy machine may make drafting not pay)
        desk = {"name": "desk", "backend": "openai", "remote": {"base_url": srv.base_url}, "system_prompt": ""}
        with RemoteEngine(profile_from_dict(desk, "<desk profile>")) as remote:
            desk_turn = remote.run_chat(QUOTE, Sampling(temperature=0.0, max_tokens=64, repeat_penalty=1.0))
        seen = desk_turn.metrics
        assert 0 < seen.draft_n_accepted <= seen.draft_n, seen  # (the quoting reply was drafted)
        body = {"model": "x", "messages": QUOTE, "max_tokens": 64, "temperature": 0, "repeat_penalty": 1.0}
        replies = [httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=300).json() for _ in range(2)]
    with Engine(make_profile(context=1024, threads=1)) as plain:
        expected = plain.run_chat(QUOTE, Sampling(temperature=0.0, max_tokens=64, repeat_penalty=1.0)).text
    assert desk_turn.text == expected  # drafted, and the plain greedy text
    for reply in replies:  # (later turns draft as their measured costs say: maybe not, on a busy PC)
        assert reply["choices"][0]["message"]["content"] == expected
    timings = [r["timings"] for r in replies]
    assert all(0 <= t["draft_n_accepted"] <= t["draft_n"] for t in timings), timings
