"""Speculative decoding on real models: lossless greedy output, counters, sampling, compatibility.

Target: a Q8_0 copy of SmolLM2 made here with llama.cpp's quantizer (cached under models/,
ignored by git); draft: the packaged Q4_1 SmolLM2 (same vocabulary).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import make_profile, requantized_copy, write_profile_file

from workstation.core.engine import Engine
from workstation.core.errors import ModelFileError
from workstation.core.profiles import Sampling
from workstation.core.speculative import (
    LookupDrafter,
    ModelDrafter,
    SlotSpeculator,
    best_draft_length,
    sampling_distribution,
)

PASTE = (
    "The committee met on Tuesday to review the budget for the coming year. It agreed to raise "
    "the travel allowance by five percent, to freeze hiring until March, and to move the annual "
    "meeting from Leeds to York. Members asked the treasurer to publish the accounts monthly."
)
QUOTE = [{"role": "user", "content": "Repeat this text exactly, word for word:\n\n" + PASTE}]
PROMPTS = [
    [{"role": "user", "content": "Name three colours of the rainbow."}],
    QUOTE,
    [{"role": "user", "content": "Summarize in one sentence:\n\n" + PASTE}],
]
MAX_TOKENS = 32


@pytest.fixture(scope="session")
def q8_path(smollm2_path: Path) -> Path:
    return requantized_copy(smollm2_path, "q8_0")


def _engine(model: Path, **spec: object) -> Engine:
    return Engine(
        # one thread: llama.cpp's CPU backend then computes a one-token step bit for bit like a
        # batch, so greedy text with speculation equals plain greedy text exactly; with 2 threads
        # a one-token step differs (up to 0.55 in a logit) and near-ties flip in about 2 of 3
        # turns of 64 tokens (bench/greedy_equality.py)
        make_profile(
            model=model, context=1024, threads=1, speculative=spec, sampling={"max_tokens": MAX_TOKENS}
        )
    )


@pytest.fixture(scope="module")
def engines(q8_path: Path, smollm2_path: Path) -> Iterator[dict[str, Engine]]:
    built = {
        "off": _engine(q8_path, mode="off"),
        "lookup": _engine(q8_path, mode="lookup", draft_tokens=6),
        "draft": _engine(q8_path, mode="draft", draft_model=str(smollm2_path), draft_tokens=4),
    }
    for name in ("lookup", "draft"):  # draft every step: exercise verification, not the policy
        dec = built[name].decoder
        assert isinstance(dec, SlotSpeculator)
        dec.adaptive = False
    yield built
    for eng in built.values():
        eng.close()


@pytest.fixture(scope="module")
def plain_texts(engines: dict[str, Engine]) -> list[str]:
    out = []
    for prompt in PROMPTS:
        engines["off"].reset()
        out.append(engines["off"].run_chat(prompt).text)
    return out


@pytest.mark.parametrize("mode", ["lookup", "draft"])
def test_greedy_output_equals_plain(mode: str, engines: dict[str, Engine], plain_texts: list[str]) -> None:
    eng = engines[mode]
    total_drafted = 0
    for prompt, expected in zip(PROMPTS, plain_texts, strict=True):
        eng.reset()
        final = eng.run_chat(prompt)
        m = final.metrics
        assert final.text == expected, f"{mode} changed the greedy text for {prompt[0]['content'][:40]!r}"
        assert 0 <= m.draft_n_accepted <= m.draft_n
        total_drafted += m.draft_n
        # the KV cache holds exactly prompt + reply (minus the last sampled token at most)
        assert m.kv_used == len(eng.tokens)
        assert m.kv_used in (m.prompt_n + m.cache_n + m.predicted_n, m.prompt_n + m.cache_n + m.predicted_n - 1)
    assert total_drafted > 0


def test_lookup_accepts_on_a_quoting_prompt(engines: dict[str, Engine]) -> None:
    eng = engines["lookup"]
    eng.reset()
    m = eng.run_chat(QUOTE).metrics
    assert m.draft_n > 0
    assert m.draft_n_accepted > m.draft_n // 2, f"{m.draft_n_accepted}/{m.draft_n} accepted"


def test_draft_model_cache_follows_turns(engines: dict[str, Engine]) -> None:
    """Turn 2 reuses the draft's cache: it decodes only what is new, and stays a copy of the target's."""
    eng, off = engines["draft"], engines["off"]
    dec = eng.decoder
    assert isinstance(dec, SlotSpeculator) and isinstance(dec.drafter, ModelDrafter)
    short = Sampling(temperature=0.0, max_tokens=12, repeat_penalty=1.0)
    eng.reset()
    t1 = eng.run_chat(QUOTE, short)
    msgs = [*QUOTE, {"role": "assistant", "content": t1.text}, {"role": "user", "content": "Thanks."}]
    before = dec.drafter.n_decoded
    t2 = eng.run_chat(msgs, short)
    new_tokens = len(eng.chat_prompt(msgs)) - len(eng.chat_prompt(QUOTE))
    # catch-up of the new tokens, then at most 4 draft decodes per step for 12 steps
    assert dec.drafter.n_decoded - before <= new_tokens + 1 + 12 * 4
    assert new_tokens + 1 + 12 * 4 < len(eng.chat_prompt(msgs))  # a full re-prefill would not pass
    assert t2.metrics.cache_n > 0
    n = len(eng.chat_prompt(msgs))
    assert dec.drafter.tokens[:n] == eng.tokens[:n]
    off.reset()
    off.run_chat(QUOTE, short)
    assert t2.text == off.run_chat(msgs, short).text


def test_the_draft_moves_its_cells_as_the_target_does(engines: dict[str, Engine]) -> None:
    """At the turn that leaves a conversation's oldest messages out, the target's cells are moved
    to where the prompt has them (``slots.moved_runs``); the draft model read the whole kept
    prompt again. It moves its own cells so too, and reads only what is new."""
    eng = engines["draft"]
    dec = eng.decoder
    assert isinstance(dec, SlotSpeculator) and isinstance(dec.drafter, ModelDrafter)
    drafter = dec.drafter
    part = "the rooms on floor N hold desks, chairs, lamps, shelves and two printers each. " * 4
    talk = [{"role": r, "content": f"{i}: " + part.replace("N", str(i))} for i, r in enumerate(["user", "assistant"] * 3)]
    old, new = eng.chat_prompt(talk[:5]), eng.chat_prompt([*talk[2:], {"role": "user", "content": "And?"}])
    drafter.forget()
    drafter.sync(old[:-1], old[-1])
    before = drafter.n_decoded
    drafter.sync(new[:-1], new[-1])
    assert drafter.tokens == new
    assert drafter.n_decoded - before < len(new) // 3, (drafter.n_decoded - before, len(new))
    drafter.forget()


def test_adaptive_decoder_is_lossless_too(engines: dict[str, Engine], plain_texts: list[str]) -> None:
    dec = engines["lookup"].decoder
    assert isinstance(dec, SlotSpeculator)
    dec.adaptive = True
    try:
        engines["lookup"].reset()
        assert engines["lookup"].run_chat(PROMPTS[1]).text == plain_texts[1]
    finally:
        dec.adaptive = False


@pytest.mark.parametrize("mode", ["lookup", "draft"])
def test_temperature_path_produces_text(mode: str, engines: dict[str, Engine]) -> None:
    eng = engines[mode]
    eng.reset()
    s = Sampling(temperature=0.8, top_p=0.95, top_k=40, min_p=0.05, repeat_penalty=1.1, max_tokens=24, seed=7)
    final = eng.run_chat(QUOTE, s)
    m = final.metrics
    assert final.text.strip()
    assert "\ufffd" not in final.text
    assert m.draft_n > 0 and 0 <= m.draft_n_accepted <= m.draft_n
    assert m.kv_used == len(eng.tokens)


def test_seed_minus_one_is_a_new_seed_each_turn_with_speculation(engines: dict[str, Engine]) -> None:
    """-1, llama.cpp's "random" (chat --seed -1, a request's seed), failed every turn of a
    speculative profile: numpy's generator refuses a negative seed."""
    eng = engines["lookup"]
    eng.reset()
    final = eng.run_chat(QUOTE, Sampling(temperature=0.8, max_tokens=6, seed=-1))
    assert final.text.strip() and final.metrics.stop_reason in ("eos", "length")


@pytest.mark.parametrize("mode", ["lookup", "draft"])
def test_a_seeded_reply_is_the_same_however_much_was_drafted(mode: str, engines: dict[str, Engine]) -> None:
    """`chat --help` promises "the same seed and settings, the same reply". With speculation a
    seeded reply at temperature 0.7 changed from run to run: drafted tokens were checked with
    extra random draws (and a draft model drew from the same generator), and how many were drafted
    depends on timing. Now each position takes the one draw a plain step takes, through the same
    sampler chain: drafting 6, 2 or no tokens gives the reply the profile gives without speculation."""
    seeded = Sampling(temperature=0.7, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.1,
                      max_tokens=MAX_TOKENS, seed=11)
    off, eng = engines["off"], engines[mode]
    off.reset()
    plain = off.run_chat(QUOTE, seeded).text
    dec = eng.decoder
    assert isinstance(dec, SlotSpeculator)
    kmax = dec.kmax
    texts, drafted = [], []
    try:
        for k, drafting in ((kmax, True), (2, True), (kmax, True), (kmax, False)):
            dec.kmax, dec.off_for_session = k, not drafting
            eng.reset()
            final = eng.run_chat(QUOTE, seeded)
            texts.append(final.text)
            drafted.append(final.metrics.draft_n)
    finally:
        dec.kmax, dec.off_for_session = kmax, False
    assert drafted[0] > 0 and drafted[1] > 0 and drafted[3] == 0, drafted
    assert texts == [plain] * 4, texts


def test_gemma_draft_for_smollm2_is_refused_by_profiles_check_as_by_loading(
        smollm2_path: Path, gemma_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`profiles check` said "ready: yes" to a draft that loading refuses; and the sizes were
    written the other way round (gemma "uses a different vocabulary (49152 vs 262144 tokens)")."""

    from workstation.cli import main

    profile = make_profile(model=smollm2_path, speculative={"mode": "draft", "draft_model": str(gemma_path)})
    why = (f"The draft model {gemma_path.name} uses a different vocabulary (262,144 tokens, where the model it "
           f"drafts for has 49,152), so it cannot draft for {smollm2_path.name}.")
    with pytest.raises(ModelFileError) as refused:
        Engine(profile)
    assert str(refused.value) == why
    write_profile_file(tmp_path / "pair.yaml", profile)
    assert main(["profiles", "check", "-p", str(tmp_path / "pair.yaml")]) == 1
    assert f"ready            no: {why}" in capsys.readouterr().out
    # fit said "verdict: runs on the CPU … with its draft model", exit 0
    assert main(["fit", "-p", str(tmp_path / "pair.yaml")]) == 1
    out = capsys.readouterr().out
    assert f"  verdict:   does not run here: {why}\n  memory:    as planned, it runs on the CPU" in out, out
    assert main(["fit", "-p", str(tmp_path / "pair.yaml"), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["draft_problem"] == why
    # in Turkish, as loading and fit say it there (it was English in the Turkish app and fit)
    from workstation.tui.i18n import Texts

    turkish = (f"Küçük yardımcı model {gemma_path.name} başka bir sözcük dağarcığı (262.144 token; yardımcı olduğu "
               f"modelinki 49.152) kullanıyor, bu yüzden {smollm2_path.name} modelini hızlandıramaz.")
    assert Texts("tr").error(refused.value) == turkish
    assert main(["fit", "-p", str(tmp_path / "pair.yaml"), "--lang", "tr"]) == 1
    assert f"  sonuç:        burada çalışmaz: {turkish}\n" in capsys.readouterr().out


# --- pure parts --------------------------------------------------------------------------------
def test_a_draft_drawn_ahead_is_the_token_the_chain_then_draws() -> None:
    """A draft model at temperature > 0 draws with a copy of the target's generator
    (``SamplerChain.draws_ahead``): from the target's own distribution it picks exactly what the
    chain then samples, and copying draws nothing from the chain (its tokens stay the same)."""
    import ctypes

    import llama_cpp

    from workstation.core.sampling import SamplerChain

    n = 500
    s = Sampling(temperature=0.7, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0, seed=5)
    rows = [(np.random.default_rng(i).normal(size=n) * 3).astype(np.float32) for i in range(60)]

    def sampled(chain: SamplerChain, x: np.ndarray) -> int:
        data = (llama_cpp.llama_token_data * n)(*(llama_cpp.llama_token_data(i, float(x[i]), 0.0) for i in range(n)))
        arr = llama_cpp.llama_token_data_array(data, n, -1, False)
        llama_cpp.llama_sampler_apply(chain.chain, ctypes.byref(arr))
        return int(data[arr.selected].id)

    with_draws, alone = SamplerChain(s, n), SamplerChain(s, n)
    try:
        picked, drawn = [], []
        for x in rows:
            draws = with_draws.draws_ahead()
            assert draws is not None
            picked.append(draws.pick(*sampling_distribution(x, s, [])))
            draws.close()
            drawn.append(sampled(with_draws, x))
        assert picked == drawn
        assert len(set(drawn)) > 5  # sampled, not the most likely token every time
        assert [sampled(alone, x) for x in rows] == drawn
    finally:
        with_draws.close()
        alone.close()
    greedy = SamplerChain(Sampling(temperature=0.0), n)
    assert greedy.draws_ahead() is None
    greedy.close()


def test_sampling_distribution_filters_like_the_chain() -> None:
    logits = np.log(np.array([0.4, 0.3, 0.2, 0.06, 0.04], dtype=np.float32))
    s = Sampling(temperature=1.0, top_k=4, top_p=0.85, min_p=0.0, repeat_penalty=1.0)
    ids, p = sampling_distribution(logits, s, [])
    assert list(ids) == [0, 1, 2]  # top-k 4, then top-p keeps until 0.9 >= 0.85
    assert p == pytest.approx([0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9], rel=1e-5)
    ids, _ = sampling_distribution(logits, Sampling(temperature=1.0, top_k=0, top_p=1.0, min_p=0.45), [])
    assert list(ids) == [0, 1, 2]  # p >= 0.45 * 0.4


def test_sampling_distribution_keeps_top_k_and_divides_by_the_temperature() -> None:
    """Drafted tokens at temperature > 0 were checked against a distribution with one token
    fewer than top_k and the temperature left out: speculation changed what a profile samples."""
    logits = np.array([3.0, 2.0, 1.0, 0.0], dtype=np.float32)
    s = Sampling(temperature=0.5, top_k=2, top_p=1.0, min_p=0.0, repeat_penalty=1.0)
    ids, p = sampling_distribution(logits, s, [])
    assert list(ids) == [0, 1]
    assert p == pytest.approx([1 / (1 + np.exp(-2.0)), np.exp(-2.0) / (1 + np.exp(-2.0))])


def test_penalties_are_the_ones_llama_cpps_sampler_applies() -> None:
    """The distribution a drafted token is checked against (temperature > 0) takes the repeat,
    presence and frequency penalties off as llama.cpp's penalties sampler does in the chain."""
    import ctypes

    import llama_cpp

    n = 50
    logits = np.random.default_rng(0).normal(size=n).astype(np.float32)
    history = [3, 3, 7, 10, 3, 7, 41]
    s = Sampling(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.3,
                 presence_penalty=0.5, frequency_penalty=0.25)
    chain = llama_cpp.llama_sampler_init_penalties(n, 64, 1.3, 0.25, 0.5)
    try:
        for token in history:
            llama_cpp.llama_sampler_accept(chain, token)
        data = (llama_cpp.llama_token_data * n)(*(llama_cpp.llama_token_data(i, float(logits[i]), 0.0)
                                                  for i in range(n)))
        arr = llama_cpp.llama_token_data_array(data, n, -1, False)
        llama_cpp.llama_sampler_apply(chain, ctypes.byref(arr))
        theirs = np.array([data[i].logit for i in range(n)], dtype=np.float64)
    finally:
        llama_cpp.llama_sampler_free(chain)
    assert theirs[3] < logits[3] - 1  # penalized thrice: llama.cpp took it off
    ids, p = sampling_distribution(logits, s, history)
    ours = np.zeros(n)
    ours[ids] = p
    expected = np.exp(theirs - theirs.max())
    assert ours == pytest.approx(expected / expected.sum(), rel=1e-5)


def test_lookup_drafter_copies_what_followed() -> None:
    lk = LookupDrafter(3)
    text = [5, 6, 7, 8, 9, 10, 1, 2, 5, 6]
    n, cand = lk.propose(text, 7, 4)
    assert (n, cand) == (3, [8, 9, 10, 1])
    n, cand = lk.propose([*text, 7, 3], 42, 4)
    assert (n, cand) == (0, [])


def test_draft_length_policy() -> None:
    # verification nearly free, high acceptance: draft long
    assert best_draft_length(0.95, 8, 10.0, 1.0, 0.0)[0] >= 6
    # a draft token costs more than a plain step: never draft
    assert best_draft_length(1.0, 8, 10.0, 3.0, 9.0)[0] == 0


def test_a_rejected_draft_starts_the_next_at_one_token() -> None:
    """After a draft was partly rejected the next stayed as long as the last (slow start never
    began again), so a lookup that stopped matching kept verifying tokens thrown away."""
    from workstation.core.profiles import Speculative
    from workstation.core.speculative import SpecCosts

    dec = SlotSpeculator(Speculative(mode="lookup", draft_tokens=8), LookupDrafter(3), SpecCosts())
    lengths: list[int] = []
    for drafted, accepted in ((1, 1), (2, 2), (4, 1)):
        dec.after_step(0.01, drafted, accepted, accepted + 1, timed=False)
        lengths.append(dec.run_k)
    assert lengths == [2, 4, 1]


def test_adaptive_lookup_drafts_grow_like_a_slow_start(
    engines: dict[str, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the cost model asks for one token: one after a rejection, twice the last length
    after a fully accepted draft (up to draft_tokens)."""
    from workstation.core import speculative

    eng = engines["lookup"]
    dec = eng.decoder
    assert isinstance(dec, SlotSpeculator)
    monkeypatch.setattr(dec, "_choose", lambda cls, kmax: 1)
    monkeypatch.setattr(speculative, "BAIL_OUT_PLAIN_STEPS", 1e9)  # timing must not stop it here
    dec.adaptive = True
    try:
        eng.reset()
        eng.run_chat(QUOTE)
    finally:
        dec.adaptive = False
    steps = dec.turn_steps
    assert steps, "the cost model never let the lookup draft on a quoting prompt"
    assert steps[0][0] == 1
    for (drafted, accepted), (following, _) in zip(steps, steps[1:], strict=False):
        limit = min(2 * drafted, dec.kmax) if accepted == drafted else 1
        assert following <= limit, steps
    if any(a == d for d, a in steps[:-1]):
        assert max(d for d, _ in steps) >= 2, steps


def test_a_turn_whose_drafts_lose_time_stops_drafting(
    engines: dict[str, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drafting that has cost more than BAIL_OUT_PLAIN_STEPS plain steps stops for the turn;
    the text stays the greedy text."""
    from workstation.core import speculative

    eng = engines["lookup"]
    dec = eng.decoder
    assert isinstance(dec, SlotSpeculator)
    monkeypatch.setattr(dec, "_choose", lambda cls, kmax: kmax)  # always draft all it can
    monkeypatch.setattr(speculative, "BAIL_OUT_PLAIN_STEPS", -1e9)  # any step "loses": stop
    before = dec.turns_bailed_out
    dec.adaptive = True
    try:
        eng.reset()
        text = eng.run_chat(QUOTE).text
    finally:
        dec.adaptive = False
    assert dec.turns_bailed_out == before + 1
    assert len(dec.turn_steps) == 1  # one draft step, then plain decoding to the end
    eng.reset()
    assert eng.run_chat(QUOTE).text == text


def test_the_draft_vocabulary_rule_is_llama_cpps() -> None:
    """A draft may differ from its target by padding at the end of the vocabulary (Qwen2.5 0.5B
    has 151,936 tokens, 14B 152,064), never by a token text from id 5 on."""
    from workstation.core.model_info import draft_token_difference as phrase
    from workstation.core.phrases import say

    def draft_token_difference(target: list[bytes], draft: list[bytes]) -> str | None:
        said = phrase(target, draft)
        return say([said]) if said else None

    words = [b"<unk>", b"<s>", b"</s>", b"<pad>", b"<mask>"] + [b"w%d" % i for i in range(300)]
    padded = words + [b"[PAD%d]" % i for i in range(128)]
    assert draft_token_difference(padded, words) is None
    assert draft_token_difference(words, padded) is None
    assert "(304 tokens, where the model it drafts for has 434)" in (draft_token_difference(padded + [b"x"], words[:-1]) or "")
    special = [b"<|endoftext|>"] + words[1:]  # the first ids are special tokens: not compared
    assert draft_token_difference(special, words) is None
    other = words[:40] + [b"zz"] + words[41:]
    assert "token 40 is 'zz' there, not 'w35'" in (draft_token_difference(words, other) or "")


def test_a_draft_with_the_same_vocabulary_in_another_quantization_is_accepted(smollm2_path: Path) -> None:
    from workstation.core.gguf_check import token_texts
    from workstation.core.model_info import draft_vocabulary_difference, read_model_info

    q8 = smollm2_path.with_name("SmolLM2-135M-Instruct.Q8_0.gguf")
    assert draft_vocabulary_difference(read_model_info(smollm2_path), read_model_info(q8)) is None
    texts = token_texts(smollm2_path)
    assert len(texts) == read_model_info(smollm2_path).n_vocab and texts[:2] == token_texts(q8)[:2]
