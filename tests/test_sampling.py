"""The greedy shortcut (numpy argmax) picks exactly what llama.cpp's greedy sampler picks."""

from __future__ import annotations

from pathlib import Path

from workstation.core.profiles import Sampling
from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings
from workstation.core.sampling import SamplerChain


def test_argmax_equals_the_greedy_chain_on_every_output(smollm2_path: Path) -> None:
    model = LoadedModel(smollm2_path, RuntimeSettings(n_ctx=512, n_threads=2))
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
