"""Token probabilities (``logprobs``, ``top_logprobs``, ``n_probs``) and ``logit_bias``: recorded
by the scheduler from the real model, checked against llama-cpp-python's own logits, and served
over real HTTP to the official ``openai`` client."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import openai
import pytest
from conftest import make_profile
from serve_helpers import RunningServer, openai_client, served_module

from workstation.core.events import TokenDelta, TurnFinished
from workstation.core.profiles import Constraints, Sampling
from workstation.core.scheduler import Scheduler
from workstation.core.server.logprobs import parse_logit_bias
from workstation.core.token_probs import TokenProb

QUESTION = [{"role": "user", "content": "Name three colours of the rainbow."}]
PASTE = (
    "The committee met on Tuesday to review the budget for the coming year. It agreed to raise "
    "the travel allowance by five percent and to move the annual meeting from Leeds to York."
)
N_TOP = 5
GREEDY = Sampling(temperature=0.0, repeat_penalty=1.0, max_tokens=8, seed=1)


@pytest.fixture(scope="module")
def sched(smollm2_path: Path) -> Iterator[Scheduler]:
    with Scheduler(make_profile(threads=1, context=1024), n_parallel=1, threaded=False) as s:
        yield s


def turn(
    sched: Scheduler, prompt: list[int], sampling: Sampling = GREEDY, **kwargs: Any
) -> tuple[list[TokenDelta], TurnFinished]:
    """One request's events, its prompt read afresh (a cached prompt decodes its last token alone,
    which can move a logit by a hair and flip a near-tie)."""
    sched.reset()
    events = list(sched.stream(prompt, sampling, **kwargs))
    final = events[-1]
    assert isinstance(final, TurnFinished)
    return [e for e in events if isinstance(e, TokenDelta)], final


@pytest.fixture(scope="module")
def prompt(sched: Scheduler) -> list[int]:
    return sched.chat_tokens(QUESTION)


@pytest.fixture(scope="module")
def recorded(sched: Scheduler, prompt: list[int]) -> tuple[list[TokenDelta], TurnFinished]:
    return turn(sched, prompt, constraints=Constraints(n_probs=N_TOP), max_tokens=8)


def reference_log_probs(model_path: Path, prompt: list[int], reply: list[int]) -> np.ndarray:
    """float64 log-softmax of llama-cpp-python's own logits at each reply position: its high-level
    ``Llama`` (logits for every position), fed the prompt in one batch and the reply one token at a
    time, as the scheduler decodes them, at 1 thread."""
    import llama_cpp

    llm = llama_cpp.Llama(
        str(model_path), n_ctx=1024, n_batch=512, n_threads=1, n_threads_batch=1, logits_all=True,
        flash_attn=True, verbose=False,
    )
    try:
        llm.eval(prompt)
        for tok in reply[:-1]:
            llm.eval([tok])
        logits = np.array(llm.scores[len(prompt) - 1 : len(prompt) - 1 + len(reply)], dtype=np.float64)
    finally:
        llm.close()
    out = logits - logits.max(axis=1, keepdims=True)
    return out - np.log(np.exp(out).sum(axis=1, keepdims=True))


def test_probs_equal_llama_cpp_log_softmax(
    recorded: tuple[list[TokenDelta], TurnFinished], prompt: list[int], smollm2_path: Path
) -> None:
    final = recorded[1]
    probs = final.probs
    assert [p.token for p in probs] == final.tokens and len(probs) == 8
    ref = reference_log_probs(smollm2_path, prompt, final.tokens)
    for j, p in enumerate(probs):
        assert p.logprob == pytest.approx(ref[j, p.token], abs=1e-3)
        for tok, lp in p.top:
            assert lp == pytest.approx(ref[j, tok], abs=1e-3)
        # the top list holds the N most likely tokens (up to near-ties at its edge)
        nth = np.sort(ref[j])[-N_TOP]
        assert all(ref[j, tok] >= nth - 1e-3 for tok, _ in p.top)


def test_top_list_is_sorted_and_holds_the_greedy_choice(recorded: tuple[list[TokenDelta], TurnFinished]) -> None:
    for p in recorded[1].probs:
        values = [lp for _, lp in p.top]
        assert len(p.top) == N_TOP and values == sorted(values, reverse=True)
        assert all(lp <= 0 for lp in values) and sum(math.exp(lp) for lp in values) <= 1 + 1e-6
        assert p.top[0] == (p.token, p.logprob)  # greedy took the most likely token


def test_deltas_carry_the_tokens_of_their_text(recorded: tuple[list[TokenDelta], TurnFinished], sched: Scheduler) -> None:
    deltas, final = recorded
    assert [p for d in deltas for p in d.probs] == final.probs
    text = ""
    for d in deltas:  # each token's text starts inside the delta that carries it
        for p in d.probs:
            assert len(text) <= p.offset < len(text) + len(d.text)
        text += d.text
    assert text == final.text == sched.model.detokenize(final.tokens)


def test_stop_string_tokens_are_not_in_the_reply(
    recorded: tuple[list[TokenDelta], TurnFinished], sched: Scheduler, prompt: list[int]
) -> None:
    full = recorded[1]
    # a stop string that starts where the k-th token's text starts (and nowhere before)
    k, stop = next(
        (k, full.text[p.offset : p.offset + 3])
        for k, p in enumerate(full.probs)
        if k >= 2 and len(full.text) - p.offset >= 3 and full.text.find(full.text[p.offset : p.offset + 3]) == p.offset
    )
    deltas, final = turn(sched, prompt, constraints=Constraints(n_probs=N_TOP), max_tokens=8, stop=[stop])
    assert final.metrics.stop_reason == "stop" and final.text == full.text[: full.probs[k].offset]
    assert [p.token for p in final.probs] == full.tokens[:k]  # the stop string's tokens are left out
    sent = [p for d in deltas for p in d.probs]
    assert sent == final.probs


def test_logit_bias_ban_takes_the_second_most_likely(
    recorded: tuple[list[TokenDelta], TurnFinished], sched: Scheduler, prompt: list[int]
) -> None:
    first: TokenProb = recorded[1].probs[0]
    (best, _), (second, _) = first.top[:2]
    _, final = turn(sched, prompt, constraints=Constraints(logit_bias={best: -math.inf}, n_probs=2), max_tokens=1)
    assert final.tokens == [second]
    assert final.probs[0].top[0][0] == best  # reported probabilities are the raw logits', bias aside


def test_logit_bias_plus_100_forces_a_token(sched: Scheduler, prompt: list[int]) -> None:
    forced = sched.model.tokenize(" banana", False, False)[0]
    sampled = Sampling(temperature=1.0, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0, seed=7)
    for sampling in (GREEDY, sampled):
        _, final = turn(sched, prompt, sampling, constraints=Constraints(logit_bias={forced: 100.0}), max_tokens=1)
        assert final.tokens == [forced]


def test_logit_bias_shapes(sched: Scheduler) -> None:
    vocab = sched.model
    words = vocab.tokenize(" Hello world", False, False)
    assert len(words) == 2
    assert parse_logit_bias({"42": 5, "7": -100}, vocab) == {42: 5.0, 7: -math.inf}  # OpenAI's
    assert parse_logit_bias([[42, 1.5], [7, False]], vocab) == {42: 1.5, 7: -math.inf}  # llama-server's
    assert parse_logit_bias([[" Hello world", -0.5]], vocab) == dict.fromkeys(words, -0.5)
    assert parse_logit_bias({" Hello world": 2}, vocab) == dict.fromkeys(words, 2.0)
    assert parse_logit_bias(None, vocab) == {}


def test_drafted_tokens_report_their_own_logits(sched: Scheduler) -> None:
    """With speculation a step verifies several tokens; each one's probabilities come from its
    own batch output (1 thread: a batch computes each row bit for bit like a one-token step)."""
    quote = sched.chat_tokens([{"role": "user", "content": "Repeat this text exactly:\n\n" + PASTE}])
    _, plain = turn(sched, quote, constraints=Constraints(n_probs=3), max_tokens=24)
    profile = make_profile(threads=1, context=1024, speculative={"mode": "lookup", "draft_tokens": 6})
    with Scheduler(profile, n_parallel=1, threaded=False) as spec:
        spec.slots[0].spec.adaptive = False  # draft every step: exercise verification, not the policy
        _, drafted = turn(spec, quote, constraints=Constraints(n_probs=3), max_tokens=24)
    assert drafted.metrics.draft_n_accepted > 0 and drafted.tokens == plain.tokens
    for a, b in zip(drafted.probs, plain.probs, strict=True):
        assert a.token == b.token and [t for t, _ in a.top] == [t for t, _ in b.top]
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4)


# --- over HTTP ---------------------------------------------------------------------------------
server = served_module("serve-probs", "--parallel", "1")


@pytest.fixture(scope="module")
def client(server: RunningServer) -> openai.OpenAI:
    return openai_client(server)


def test_openai_client_reads_chat_logprobs_streamed_or_not(client: openai.OpenAI) -> None:
    args: dict[str, Any] = {"model": "x", "messages": QUESTION, "max_tokens": 8, "temperature": 0,
                            "logprobs": True, "top_logprobs": 3}
    full = client.chat.completions.create(**args)
    choice = full.choices[0]
    assert choice.logprobs is not None and choice.logprobs.content is not None
    content = choice.logprobs.content
    assert full.usage is not None and len(content) == full.usage.completion_tokens
    assert "".join(c.token for c in content) == choice.message.content
    for c in content:
        assert c.bytes == list(c.token.encode("utf-8")) and c.logprob <= 0
        assert len(c.top_logprobs) == 3 and c.top_logprobs[0].token == c.token  # greedy
    streamed = []
    for chunk in client.chat.completions.create(**args, stream=True):
        if chunk.choices and chunk.choices[0].logprobs is not None:
            streamed += chunk.choices[0].logprobs.content or []
    assert [c.token for c in streamed] == [c.token for c in content]
    # the second run reads its prompt from the cache: its last prompt token is decoded alone
    assert [c.logprob for c in streamed] == pytest.approx([c.logprob for c in content], abs=1e-3)
    plain = client.chat.completions.create(model="x", messages=QUESTION, max_tokens=2)
    assert plain.choices[0].logprobs is None


def test_completions_legacy_logprobs_and_n_probs(server: RunningServer) -> None:
    body = {"prompt": "The capital of France is", "max_tokens": 5, "temperature": 0, "logprobs": 2, "n_probs": 3}
    data = httpx.post(f"{server.base_url}/completions", json=body, timeout=120).json()
    choice = data["choices"][0]
    lp = choice["logprobs"]
    assert "".join(lp["tokens"]) == choice["text"] and len(lp["token_logprobs"]) == 5
    assert lp["text_offset"][0] == 0 and lp["text_offset"] == sorted(lp["text_offset"])
    for tok, value, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"], strict=True):
        assert top[tok] == value and len(top) <= 3  # the two most likely, and the chosen one
    native = data["completion_probabilities"]
    assert [p["token"] for p in native] == lp["tokens"]
    for p, value in zip(native, lp["token_logprobs"], strict=True):
        assert p["logprob"] == value and set(p) == {"id", "token", "bytes", "logprob", "top_logprobs"}
        assert len(p["top_logprobs"]) == 3 and p["top_logprobs"][0]["id"] == p["id"]
    # a ban over HTTP, in llama-server's list shape: the first token becomes the runner-up
    first = native[0]["top_logprobs"]
    banned = {**body, "max_tokens": 1, "logit_bias": [[first[0]["id"], False]]}
    data = httpx.post(f"{server.base_url}/completions", json=banned, timeout=120).json()
    assert data["completion_probabilities"][0]["id"] == first[1]["id"]


@pytest.mark.parametrize(
    ("route", "fields", "param"),
    [
        ("chat/completions", {"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
        ("chat/completions", {"top_logprobs": 2}, "top_logprobs"),
        ("chat/completions", {"logprobs": "yes"}, "logprobs"),
        ("completions", {"logprobs": 21}, "logprobs"),
        ("completions", {"logprobs": True}, "logprobs"),
        ("completions", {"n_probs": -1}, "n_probs"),
        ("chat/completions", {"logit_bias": {"999999": 1}}, "logit_bias"),
        ("chat/completions", {"logit_bias": {"5": 101}}, "logit_bias"),
        ("completions", {"logit_bias": [[5]]}, "logit_bias"),
        ("completions", {"logit_bias": "none"}, "logit_bias"),
        ("completions", {"logit_bias": {"5": True}}, "logit_bias"),
    ],
)
def test_bad_values_are_one_sentence_400s(server: RunningServer, route: str, fields: dict[str, Any], param: str) -> None:
    base: dict[str, Any] = {"messages": QUESTION} if route.startswith("chat") else {"prompt": "Hello"}
    r = httpx.post(f"{server.base_url}/{route}", json={**base, "max_tokens": 1, **fields}, timeout=60)
    error = r.json()["error"]
    assert r.status_code == 400 and error["param"] == param
    assert error["message"].endswith(".") and "\n" not in error["message"] and "Traceback" not in error["message"]
