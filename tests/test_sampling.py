"""The greedy shortcut (numpy argmax) picks exactly what llama.cpp's greedy sampler picks."""

from __future__ import annotations

from pathlib import Path

import pytest

from workstation.core.profiles import Sampling
from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings
from workstation.core.sampling import SamplerChain


def test_argmax_equals_the_greedy_chain_on_every_output(smollm2_path: Path) -> None:
    model = LoadedModel(smollm2_path, RuntimeSettings(n_ctx=512, n_threads=1))
    batch = Batch(256)
    try:
        tokens = model.tokenize("The quick brown fox jumps over the lazy dog. Paris is the capital of", add_special=True)
        for j, tok in enumerate(tokens):
            batch.add(tok, j, 0, True)  # logits for every position: many different rows
        model.decode(batch)
        fast = SamplerChain(Sampling(temperature=0.0, repeat_penalty=1.0), model.n_vocab)
        chain = SamplerChain(Sampling(temperature=0.0, repeat_penalty=1.0), model.n_vocab)
        chain.argmax = False
        assert fast.argmax
        picks = [fast.sample(model.ctx, i) for i in range(len(tokens))]
        assert picks == [chain.sample(model.ctx, i) for i in range(len(tokens))]
        assert picks == [int(model.logits(i).argmax()) for i in range(len(tokens))]
        assert len(set(picks)) > 3  # the rows differ, so the comparison means something
        penalised = SamplerChain(Sampling(temperature=0.0, repeat_penalty=1.3), model.n_vocab)
        assert not penalised.argmax  # a penalty keeps history: the chain stays
        for s in (fast, chain, penalised):
            s.close()
    finally:
        batch.close()
        model.close()


def _greedy_with_penalties(model: LoadedModel, prompt: list[int], s: Sampling, window_has_prompt: bool) -> str:
    """A greedy reply with llama.cpp's penalties written out in numpy: the window the last 64
    tokens of the prompt and the reply (llama-server and llama-cli feed the prompt through the
    sampler), or of the reply alone."""
    import numpy as np

    batch = Batch(512)
    try:
        for j, tok in enumerate(prompt):
            batch.add(tok, j, 0, j == len(prompt) - 1)
        model.decode(batch)
        history = list(prompt) if window_has_prompt else []
        out: list[int] = []
        for step in range(s.max_tokens):
            x = model.logits(-1).astype(np.float64)  # the last output
            if history:
                seen, counts = np.unique(np.asarray(history[-64:]), return_counts=True)
                v = x[seen]
                v = np.where(v <= 0, v * s.repeat_penalty, v / s.repeat_penalty)
                x[seen] = v - counts * s.frequency_penalty - s.presence_penalty
            tok = int(x.argmax())
            if model.is_eog(tok):
                break
            out.append(tok)
            history.append(tok)
            batch.clear()
            batch.add(tok, len(prompt) + step, 0, True)
            model.decode(batch)
        return model.detokenize(out)
    finally:
        batch.close()


def test_the_penalties_look_at_the_prompts_end_as_llama_server(smollm2_path: Path) -> None:
    """llama-server accepts the prompt's tokens into its sampler before the reply, so the
    repeat penalty also keeps a reply from copying the question's words; ours looked at the
    reply alone, and the same request answered otherwise than llama-server."""
    from conftest import make_profile

    from workstation.core.engine import Engine
    from workstation.core.events import TurnFinished

    text = "The secret word is banana. The secret word is banana. Please repeat the secret word:"
    s = Sampling(temperature=0.0, repeat_penalty=1.5, frequency_penalty=0.3, max_tokens=12)
    model = LoadedModel(smollm2_path, RuntimeSettings(n_ctx=512, n_threads=1))
    try:
        prompt = model.tokenize(text, add_special=True)
        llama_server = _greedy_with_penalties(model, prompt, s, window_has_prompt=True)
        model.clear_memory()
        reply_only = _greedy_with_penalties(model, prompt, s, window_has_prompt=False)
    finally:
        model.close()
    assert llama_server != reply_only  # the prompt's words are penalised: the test can tell
    with Engine(make_profile(context=512)) as engine:
        done = [e for e in engine.stream_tokens(prompt, s) if isinstance(e, TurnFinished)]
    assert done[0].text == llama_server, (done[0].text, llama_server, reply_only)


def _chain_applied(s: Sampling, logits: list[float], prompt: list[int] | None = None) -> dict[int, float]:
    """The tokens SamplerChain keeps for fixed logits, with their logits after the chain (no model:
    llama.cpp's samplers applied to a candidate array), the penalties' window fed ``prompt``."""
    import ctypes

    import llama_cpp

    chain = SamplerChain(s, len(logits))
    try:
        chain.remember(prompt or [])
        data = (llama_cpp.llama_token_data * len(logits))(
            *(llama_cpp.llama_token_data(i, x, 0.0) for i, x in enumerate(logits)))
        arr = llama_cpp.llama_token_data_array(data, len(logits), -1, False)
        llama_cpp.llama_sampler_apply(chain.chain, ctypes.byref(arr))
        return {data[i].id: data[i].logit for i in range(arr.size)}
    finally:
        chain.close()


def test_the_penalties_count_the_prompts_last_64_tokens_frequency_per_use_presence_once() -> None:
    """Frequency took a token's logit down once and presence for each use (swapped), and the
    window was the prompt's first 64 tokens, so a long prompt's end went unpenalised."""
    s = Sampling(temperature=0.0, repeat_penalty=1.0, frequency_penalty=0.5, presence_penalty=0.25)
    kept = _chain_applied(s, [1.0] * 8, [5] + [7] * 61 + [2, 2, 2])  # 64 tokens after the 5
    assert kept[2] == pytest.approx(1.0 - 3 * 0.5 - 0.25)
    assert kept[5] == 1.0  # out of the window
    assert kept[7] == pytest.approx(1.0 - 61 * 0.5 - 0.25)


def test_min_p_drops_the_tokens_far_below_the_most_likely() -> None:
    """min_p was never put in the chain: a profile's min_p 0.5 still drew unlikely tokens."""
    s = Sampling(temperature=1.0, top_k=0, top_p=1.0, min_p=0.5, repeat_penalty=1.0, seed=1)
    assert sorted(_chain_applied(s, [5.0, 4.9, 0.0, 0.0])) == [0, 1]
