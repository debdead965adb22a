"""The engine on the real SmolLM2 model: streaming, determinism, KV reuse, cancel, metrics."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_profile

from workstation.core.engine import Engine
from workstation.core.engine_api import answer_reserve
from workstation.core.errors import EngineError, ModelFileError
from workstation.core.events import PromptRead, TokenDelta, TurnFinished, finished_turn
from workstation.core.kv_state import KvStateStore

HELLO = [{"role": "user", "content": "Name three colours of the rainbow."}]


def test_turn_streams_text(engine: Engine) -> None:
    events = list(engine.stream_chat(HELLO))
    deltas = [e for e in events if isinstance(e, TokenDelta)]
    final = events[-1]
    assert isinstance(final, TurnFinished)
    assert deltas, "no text was streamed"
    assert "".join(d.text for d in deltas) == final.text
    assert final.text.strip()


def test_greedy_is_repeatable(engine: Engine) -> None:
    engine.reset()
    first = engine.run_chat(HELLO).text
    engine.reset()
    second = engine.run_chat(HELLO).text
    assert first == second
    # and again with the cache warm: the reused prefix must not change the output
    third = engine.run_chat(HELLO).text
    assert third == first


def test_second_turn_reuses_prompt_and_reply(engine: Engine) -> None:
    engine.reset()
    turn1_prompt = engine.chat_prompt(HELLO)
    t1 = engine.run_chat(HELLO)
    assert t1.metrics.cache_n == 0
    messages = [*HELLO, {"role": "assistant", "content": t1.text}, {"role": "user", "content": "And two more?"}]
    t2 = engine.run_chat(messages)
    # turn 2's cache covers turn 1's whole prompt and its reply tokens (the last sampled token
    # is only decoded when the reply goes on, so a reply cut by max_tokens leaves one out)
    assert t1.metrics.kv_used >= len(turn1_prompt) + t1.metrics.predicted_n - 1
    assert t2.metrics.cache_n == t1.metrics.kv_used
    assert t2.metrics.prompt_n + t2.metrics.cache_n == len(engine.chat_prompt(messages))


def test_next_turn_keeps_a_reply_generated_as_other_tokens(engine: Engine) -> None:
    """A reply comes back as text, and its text tokenized again need not be the tokens it was
    generated as (a sampled reply wrote " Ab" "on" where " A" "bon" is read): its cells are kept
    all the same, the prompt taking the tokens they hold for that text."""
    from workstation.core.profiles import Sampling

    engine.reset()
    reply = "Abon de ne, Turkish: lütfen."
    asked = [*HELLO, {"role": "assistant", "content": reply}]
    head = engine.chat_prompt(HELLO)
    written = [t for ch in reply for t in engine.model.tokenize(ch, add_special=False, parse_special=False)]
    assert engine.chat_prompt(asked) != head + written  # the same text, other tokens
    finished_turn(engine.stream_tokens(head + written, Sampling(temperature=0.0, max_tokens=1)))
    turn = engine.run_chat([*asked, {"role": "user", "content": "And two more?"}]).metrics
    # without taking the cells' tokens, only the question before the reply was kept (cache_n 38 of 65)
    assert turn.cache_n >= len(head + written), turn
    # a client's usage counts the prompt's text as it reads, not the kept reply's tokens as generated
    from workstation.core.server.protocol import usage

    question = engine.chat_prompt([*asked, {"role": "user", "content": "And two more?"}])
    assert turn.aligned_n == turn.prompt_n + turn.cache_n - len(question) != 0, turn
    assert usage(turn)["prompt_tokens"] == len(question)
    # ... on each route alike (responses said the cells' 276, Ollama's prompt_eval_count too), and
    # of it no more cached than it counts (cached_tokens said the cells' count, above prompt_tokens)
    from workstation.core.server.responses import _usage

    assert _usage(turn)["input_tokens"] == len(question), _usage(turn)
    assert usage(turn)["prompt_tokens_details"]["cached_tokens"] == len(question) - turn.prompt_n, usage(turn)
    # the tokens a reply was generated as are more than its text read again: a prompt that fits
    # its slot by a few tokens takes no more of them than fit (it failed "The context is full")
    from workstation.core.slots import aligned_prompt

    prompt = engine.chat_prompt(asked)
    assert len(aligned_prompt(head + written, prompt, engine.model.piece)) > len(prompt)
    fitted = aligned_prompt(head + written, prompt, engine.model.piece, most=len(prompt))
    assert len(fitted) <= len(prompt) and engine.model.detokenize(fitted) == engine.model.detokenize(prompt)


def test_metrics_are_consistent(engine: Engine) -> None:
    engine.reset()
    wall0 = time.perf_counter()
    final = engine.run_chat(HELLO)
    wall = (time.perf_counter() - wall0) * 1000
    m = final.metrics
    reply_tokens = engine.model.tokenize(final.text, add_special=False, parse_special=False)
    # predicted_n counts the reply's tokens (retokenizing may merge a few differently)
    assert abs(m.predicted_n - len(reply_tokens)) <= max(2, m.predicted_n // 10)
    assert 0 < m.ttft_ms < m.total_ms <= wall + 1
    assert m.predicted_per_second == pytest.approx(m.predicted_n / m.predicted_ms * 1000)
    assert m.prompt_per_second == pytest.approx(m.prompt_n / m.prompt_ms * 1000)
    assert m.predicted_per_token_ms == pytest.approx(m.predicted_ms / m.predicted_n)
    assert m.kv_used in (m.prompt_n + m.cache_n + m.predicted_n, m.prompt_n + m.cache_n + m.predicted_n - 1)
    assert m.kv_size == engine.model.n_ctx
    assert m.stop_reason in ("eos", "length")


def test_max_tokens_stops_with_length(engine: Engine) -> None:
    from workstation.core.profiles import Sampling

    final = engine.run_chat(
        [{"role": "user", "content": "Write a long story about a cat."}],
        Sampling(temperature=0.0, max_tokens=5, repeat_penalty=1.0),
    )
    assert final.metrics.predicted_n == 5
    assert final.metrics.stop_reason == "length"


def test_a_reply_of_one_token_has_no_rate_to_show(engine: Engine) -> None:
    """--max-tokens 1 printed "0.0 tok/s · 1 tokens": one token has no time between tokens."""
    from workstation.core.metrics import figures_line
    from workstation.core.profiles import Sampling
    from workstation.tui.i18n import Texts

    one = engine.run_chat([{"role": "user", "content": "Hi"}], Sampling(temperature=0.0, max_tokens=1)).metrics
    assert one.predicted_n == 1
    assert one.summary_line().split(" · ")[1] == "1 token"  # (the prompt's rate stays: "prompt … at N tok/s")
    assert figures_line(one).split(" · ")[1] == "1 token"
    assert figures_line(one, Texts("tr").get).split(" · ")[1] == "1 token"
    two = engine.run_chat([{"role": "user", "content": "Hi"}], Sampling(temperature=0.0, max_tokens=2)).metrics
    assert two.predicted_n == 2 and two.summary_line().split(" · ")[1:3] == [
        f"{two.predicted_per_second:.1f} tok/s", "2 tokens"]


def test_cancel_during_generation_decodes_nothing_more_and_engine_still_works(engine: Engine) -> None:
    from workstation.core.profiles import Sampling

    engine.reset()
    long = Sampling(temperature=0.0, max_tokens=1500, repeat_penalty=1.0)
    deltas_after_cancel = 0
    decodes_at_cancel = -1
    final = None
    seen = 0
    for event in engine.stream_chat([{"role": "user", "content": "Count from 1 to 500."}], long):
        if isinstance(event, TokenDelta):
            if decodes_at_cancel >= 0:
                deltas_after_cancel += 1
            seen += 1
            if seen == 5:
                engine.cancel()  # as the TUI's Esc does, between two steps
                decodes_at_cancel = engine.core.stats.n_decode_total
        else:
            final = event
    assert final is not None and final.metrics.stop_reason == "cancelled"
    assert deltas_after_cancel == 0
    assert engine.core.stats.n_decode_total == decodes_at_cancel  # not one more llama_decode
    assert final.metrics.predicted_n == 5
    # the engine is usable afterwards, and its cache is consistent
    again = engine.run_chat(HELLO)
    assert again.text.strip() and again.metrics.stop_reason in ("eos", "length")
    assert engine.model.seq_pos_max(0) + 1 == len(engine.tokens)


class TripAfter:
    """A cancel flag that turns itself on after it has been asked ``n`` times: llama.cpp's
    abort callback asks it many times inside one prefill decode, so it trips mid-decode."""

    def __init__(self, n: int) -> None:
        self.n, self.polls, self.forced = n, 0, False

    def is_set(self) -> bool:
        self.polls += 1
        return self.forced or self.polls > self.n

    def set(self) -> None:
        self.forced = True

    def clear(self) -> None:
        self.polls, self.forced = 0, False


def test_cancel_during_long_prefill_stops_inside_llama_cpp(smollm2_path) -> None:
    flag = TripAfter(60)
    eng = Engine(make_profile(context=8192), cancel_flag=flag)
    try:
        text = " ".join(f"word{i}" for i in range(1400))  # about 6,500 tokens of prompt
        messages = [{"role": "user", "content": text}]
        n_prompt = len(eng.chat_prompt(messages))
        final = eng.run_chat(messages)
        assert final.metrics.stop_reason == "cancelled"
        assert final.metrics.predicted_n == 0
        # stopped part-way: the cells kept are exactly the prompt chunks decoded before the abort
        assert final.metrics.prompt_n < n_prompt
        assert len(eng.tokens) == final.metrics.prompt_n == final.metrics.kv_used
        assert eng.model.seq_pos_max(0) + 1 == len(eng.tokens)
        flag.n = 10**9  # no more tripping: the engine still works
        ok = eng.run_chat(HELLO)
        assert ok.text.strip()
    finally:
        eng.close()


def test_rates_are_defined_as_llama_cpp_counts_them(engine: Engine) -> None:
    """prompt tok/s and decode tok/s of a turn count what llama.cpp's own perf counters count:
    the same tokens (n - 1 decode steps for n reply tokens), over a window that holds all of
    llama.cpp's decoding time (and our per-token work outside llama_decode)."""
    import llama_cpp

    from workstation.core.profiles import Sampling

    engine.reset()
    ctx = engine.model.ctx
    llama_cpp.llama_perf_context_reset(ctx)
    final = engine.run_chat(
        [{"role": "user", "content": "Write a short paragraph about the sea and the harbour town."}],
        Sampling(temperature=0.0, max_tokens=40, repeat_penalty=1.0, ignore_eos=True),
    )
    perf = llama_cpp.llama_perf_context(ctx)
    m = final.metrics
    n = m.predicted_n
    assert n == 40 and perf.n_p_eval == m.prompt_n
    assert perf.n_eval == n - 1  # the first token comes from the prompt's logits
    window_ms = m.predicted_ms * (n - 1) / n  # first reply token to last
    assert m.predicted_per_second == pytest.approx((n - 1) / window_ms * 1000, rel=1e-9)
    assert m.predicted_per_token_ms == pytest.approx(window_ms / (n - 1), rel=1e-9)
    # every decode step lies inside the window, and the window inside the turn (how much of it
    # is our own work is a speed figure: bench/engine_overhead.py measures it)
    assert perf.t_eval_ms <= window_ms * 1.001
    assert perf.t_p_eval_ms <= m.prompt_ms * 1.001
    assert m.prompt_ms + window_ms <= m.total_ms


def test_empty_prompt_is_refused(engine: Engine) -> None:
    with pytest.raises(EngineError, match="empty"):
        engine.run_chat([{"role": "user", "content": "   "}])


def test_prompt_longer_than_context_is_refused(engine: Engine) -> None:
    """Said with the tokens kept for the reply (3,722 tokens "but the context holds 4096" read
    as if it fitted) and the app's own way out (F6)."""
    text = "lorem ipsum " * 3000
    with pytest.raises(EngineError, match=r"with \d+ kept for the reply, this profile's context \(2,048 tokens\) "
                                          r"cannot hold it.*F6 in the app") as refused:
        engine.run_chat([{"role": "user", "content": text}])
    assert refused.value.said[0][0] == "engine.too_long"  # (the app knows it by this, over a process's pipe too)
    # instructions (Alt+I) that leave no room for a message: said of them, not of "hi"
    told = "Answer as the office's assistant, who lists desks. " * 200
    with pytest.raises(EngineError, match=r"^The instructions take [\d,]+ of this profile's 2,048 tokens of context, "
                                          r"and \d+ are kept for the reply: no message fits beside them. Shorten them "
                                          r"\(Alt\+I in the app") as refused:
        engine.run_chat([{"role": "system", "content": told}, {"role": "user", "content": "hi"}])
    assert refused.value.said[0][0] == "engine.instructions_too_long"


def test_a_last_assistant_message_is_a_reply_to_go_on_from(engine: Engine) -> None:
    """As serve (llama-server's prefill): the reply begun is continued, not closed and begun
    again; the app's "continue" (a reply cut by its length limit) asks so."""
    sampling = dataclasses.replace(engine.profile.sampling, max_tokens=24, temperature=0.0)
    full = engine.run_chat(HELLO, sampling).text
    begun = full[: full.index(" ", 12)]  # a few words, cut at a space
    went_on = engine.run_chat([*HELLO, {"role": "assistant", "content": begun}], sampling).text
    assert (begun + went_on).startswith(full[: len(begun) + 30]), (full, begun, went_on)
    assert not went_on.lstrip().startswith(full[:8])  # not a fresh reply


def test_a_conversation_longer_than_the_context_says_how_many_messages_were_left_out(smollm2_path: Path) -> None:
    """The oldest messages go to make room, and the reply says how many (the app warns): they
    were dropped without a word, and the model answered a question about them as if never told."""
    engine = Engine(make_profile(context=512))  # (a quarter of the module's: a quarter to read)
    try:
        _left_out_and_said(engine)
    finally:
        engine.close()


def _left_out_and_said(engine: Engine) -> None:
    sampling = dataclasses.replace(engine.profile.sampling, max_tokens=2, temperature=0.0)
    short = [{"role": "user", "content": "My name is Ayla."}, {"role": "assistant", "content": "Hello Ayla."},
             {"role": "user", "content": "What is my name?"}]
    assert engine.run_chat(short, sampling).metrics.left_out_n == 0
    filler = "The quarterly report lists desks, chairs and lamps for every office floor. " * 5  # ~75 tokens
    long = [short[0], short[1], *[{"role": r, "content": filler} for r in ("user", "assistant") * 4], short[2]]
    assert engine.count_prompt(long) > engine.n_ctx  # the whole history does not fit
    turn = engine.run_chat(long, sampling)
    m = turn.metrics
    kept = long[m.left_out_n:]
    assert 2 <= m.left_out_n < len(long) - 1, m.left_out_n  # the name's two, and those of half the room:
    room = engine.n_ctx - answer_reserve(sampling, engine.n_ctx)
    whole = engine.count_prompt(long)
    assert whole - engine.count_prompt(kept) >= room // 2 > whole - engine.count_prompt(long[m.left_out_n - 2:])
    assert kept[0]["role"] == "user"  # a reply goes with its question (templates refuse a start with a reply)
    # the next turn starts where this one started: its prompt begins with the cells this one left
    # (it began a message later each turn, and the whole prompt was read again before every reply)
    going_on = [*long, {"role": "assistant", "content": turn.text}, {"role": "user", "content": "And my city?"}]
    again = engine.run_chat(going_on, sampling).metrics
    assert again.left_out_n == m.left_out_n
    assert again.cache_n >= engine.count_prompt(kept) - 8 and again.prompt_n < 40, again


def test_the_turn_that_leaves_out_the_oldest_messages_reads_only_what_is_new(smollm2_path: Path) -> None:
    """The turn that first leaves messages out read the whole conversation again (its prompt
    differs from the cells just after the instructions): 25.7 s before the first word, 32 of
    2,301 tokens from the cache. The kept messages' cells are moved to where the prompt has them
    (as llama-server's cache reuse does), and only the new message is read. So too when the
    cells come from the conversation's state saved at the close (``chat -c``, the app
    restarted): that turn read 502 tokens, none from the cache."""
    engine = Engine(make_profile(context=512), keep_state=True)  # (a quarter of the module's: a quarter to read)
    sampling = dataclasses.replace(engine.profile.sampling, max_tokens=2)
    filler = "lists desks, chairs and lamps for every office floor, with the rooms they are in. " * 4
    talk = [{"role": "user", "content": "My name is Ayla."}, {"role": "assistant", "content": "Hello Ayla."}]
    while True:  # a turn at a time, until one leaves messages out
        talk.append({"role": "user", "content": f"Part {len(talk)} of the report {filler}"})
        turn = finished_turn(engine.stream_chat(talk, sampling, tag="conversation:/tmp/c.db:1"))
        if turn.metrics.left_out_n:
            break
        talk.append({"role": "assistant", "content": turn.text})
    m = turn.metrics
    was_cached = engine.count_prompt(talk[m.left_out_n:-1])  # (ends with a generation prompt the cells held too)
    assert m.cache_n >= was_cached - 16 and m.prompt_n <= engine.count_prompt(talk[-1:]) + 16, m
    # the conversation's cells before the move are not written on the way (its own state at the
    # close supersedes them; they were copied out and written on every such turn)
    assert not KvStateStore().entries()
    # the cells moved are the prompt's: the next turn goes on from them as from any other
    talk += [{"role": "assistant", "content": turn.text}, {"role": "user", "content": "What is my name?"}]
    again = finished_turn(engine.stream_chat(talk, sampling, tag="conversation:/tmp/c.db:1")).metrics
    assert again.left_out_n == m.left_out_n and again.prompt_n < 40, again
    reserve = answer_reserve(sampling, engine.n_ctx)
    while True:  # on to the turn that leaves more out; the app is closed before it
        talk += [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": f"Part {len(talk)} {filler}"}]
        left_out = engine.fit_messages(talk, reserve)[1]
        if left_out > m.left_out_n:
            break
        finished_turn(engine.stream_chat(talk, sampling, tag="conversation:/tmp/c.db:1"))
    was_cached, new = engine.count_prompt(talk[left_out:-1]), engine.count_prompt(talk[-1:])
    engine.close()  # its cells saved, and read back by the next start
    engine = Engine(make_profile(context=512), keep_state=True)
    later = finished_turn(engine.stream_chat(talk, sampling, tag="conversation:/tmp/c.db:1")).metrics
    engine.close()
    assert later.left_out_n == left_out and later.restored_n == later.cache_n >= was_cached - 16, later
    assert later.prompt_n <= new + 16, later


def test_a_long_prompt_says_how_far_it_has_been_read(engine: Engine) -> None:
    """A long prompt read on a CPU takes a minute before the first word, and the app showed the
    seconds alone: asked, the engine says after each part (512 tokens) how far it has read, the
    cached part counted as read; not asked, it says nothing new (every other caller)."""
    sampling = dataclasses.replace(engine.profile.sampling, max_tokens=1)
    long = [{"role": "user", "content": "Which item is missing from the list? " + "desk, lamp, chair, " * 180}]
    events = list(engine.stream_chat(long, sampling, reading=True))
    reads = [e for e in events if isinstance(e, PromptRead)]
    total = engine.count_prompt(long)
    assert [r.read - r.cached for r in reads] == [512 * (i + 1) for i in range(len(reads))] and len(reads) >= 2
    assert all(r.total == total and 0 < r.fraction < 1 for r in reads) and reads[0].fraction < reads[-1].fraction
    assert all(isinstance(e, PromptRead) for e in events[: len(reads)])  # all before the first word
    # a prompt of one part (512 tokens or fewer) said nothing, and F5's memory gauge left the new
    # message out until the reply ended: its reading is said once, whole
    short = [e for e in engine.stream_chat([{"role": "user", "content": "Hi"}], sampling, reading=True)
             if isinstance(e, PromptRead)]
    assert len(short) == 1 and short[0].read == short[0].total > 0, short
    assert not any(isinstance(e, PromptRead) for e in engine.stream_chat([{"role": "user", "content": "Hi"}], sampling))


def test_missing_model_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ModelFileError, match="does not exist"):
        Engine(make_profile(model=tmp_path / "nope.gguf"))


def test_text_file_named_gguf_is_refused(tmp_path) -> None:
    fake = tmp_path / "fake.gguf"
    fake.write_text("this is not a model")
    with pytest.raises(ModelFileError, match="not a GGUF"):
        Engine(make_profile(model=fake))


def test_truncated_gguf_is_refused(tmp_path, smollm2_path) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(smollm2_path.read_bytes()[: 5_000_000])
    with pytest.raises(ModelFileError):
        Engine(make_profile(model=cut))


def test_a_character_cut_by_the_end_of_the_reply_is_left_out() -> None:
    """A reply cut by max_tokens between an emoji's two tokens ended in "😊�"; bytes that are
    wrong within the reply are still shown as "�"."""
    from workstation.core.detokenizer import StreamDetokenizer

    detok = StreamDetokenizer()
    smile = "😊".encode()
    assert detok.push(b"Hi " + smile[:2]) == "Hi "
    assert detok.push(smile[2:] + b" and " + smile[:3]) == "😊 and "
    assert detok.flush() == ""
    wrong = StreamDetokenizer()
    assert wrong.push(b"a\xffb") == "a\ufffdb" and wrong.flush() == ""


def test_fit_history_finds_the_start_in_a_few_counts() -> None:
    """Counted again after each message dropped, 400 messages took two minutes of tokenizing
    before the first word (and a desk PC sent 780 requests a turn): the start is found by
    halving, the same start the one-at-a-time way found, a reply with its question."""
    from workstation.core.engine_api import fit_history

    talk = [{"role": "system", "content": "s" * 10}]
    for i in range(400):
        talk += [{"role": "user", "content": "q" * (5 + i % 7)}, {"role": "assistant", "content": "a" * (20 + i % 11)}]
    talk.append({"role": "user", "content": "last"})
    counted: list[int] = []

    def count(kept: list[dict[str, str]]) -> int:
        counted.append(len(kept))
        return sum(len(m["content"]) + 3 for m in kept)

    kept, left_out = fit_history(talk, count, 2000, 100, shift=False)
    assert len(counted) <= 12  # (400 before)
    assert kept[0]["role"] == "system" and kept[1]["role"] == "user" and kept[-1]["content"] == "last"
    assert count(kept) + 100 <= 2000 and left_out == len(talk) - len(kept)
    one_more = [talk[0], *talk[1 + left_out - 2:]]  # the exchange before the first kept: did not fit
    assert count(one_more) + 100 > 2000
    going_on = [*talk[:-1], {"role": "assistant", "content": "a" * 30}]  # a reply to go on from keeps its question
    kept_on, _ = fit_history(going_on, count, 2000, 100, shift=False)
    assert kept_on[-2:] == going_on[-2:] and kept_on[1]["role"] == "user"
    kept_most, _ = fit_history(talk, count, 2000, 100, most=500, shift=False)  # a server's prompt limit
    assert count(kept_most) <= 500 < count([talk[0], *talk[len(talk) - len(kept_most) - 1:]])


def test_a_conversation_past_the_context_starts_where_it_started_while_that_fits() -> None:
    """The kept part began a message later each turn, so no prompt began with the cells of the
    turn before, and the whole conversation was read again before every reply: the oldest go
    by halves of the room (as llama.cpp's and Ollama's context shift), at starts that follow
    from the conversation alone, so the next turns start at the same message while it fits."""
    from workstation.core.engine_api import fit_history

    counted: list[int] = []

    def count(kept: list[dict[str, str]]) -> int:
        counted.append(len(kept))
        return sum(len(m["content"]) + 3 for m in kept)

    talk = [{"role": "system", "content": "s" * 10}]
    for i in range(60):
        talk += [{"role": "user", "content": f"q{i}" * 10}, {"role": "assistant", "content": f"a{i}" * 12}]
    talk.append({"role": "user", "content": "last"})
    kept, left_out = fit_history(talk, count, 2000, 100)
    assert count(kept) + 100 <= 2000 and kept[1]["role"] == "user"
    assert fit_history(talk, count, 2000, 100, shift=False)[1] < left_out  # (as few left out as make room)
    lefts = [left_out]
    for i in range(14):  # turns go on: the same start while it fits, then half the room again
        talk += [{"role": "assistant", "content": "r" * 60}, {"role": "user", "content": f"n{i}" * 20}]
        counted.clear()
        kept_now, left_now = fit_history(talk, count, 2000, 100)
        assert len(counted) <= 2 * 8 + 2  # two halvings over ~70 starts
        assert count(kept_now) + 100 <= 2000 and kept_now[1]["role"] == "user"
        if left_now == lefts[-1]:
            assert kept_now[: len(kept) - 1] == kept[:-1]  # the turn before's prompt, then the new messages
        else:
            assert left_now > lefts[-1] and count(kept_now) <= 950 + 120  # about half the room (1900) free
            assert count([talk[0], *talk[1 + lefts[-1]:]]) + 100 > 2000  # the start before no longer fitted
        kept = kept_now
        lefts.append(left_now)
    assert len(set(lefts)) == 2 and lefts.count(lefts[0]) > 4  # one new start in 14 turns (a new one each turn, before)
    # a long last message (a pasted document) that the half rooms would leave alone keeps what fits
    short = [talk[0], *({"role": r, "content": "x" * 97} for r in ("user", "assistant") * 5),
             {"role": "user", "content": "d" * 997}]
    assert fit_history(short, count, 2000, 100)[1] == fit_history(short, count, 2000, 100, shift=False)[1] == 2


def test_a_question_after_a_long_document_keeps_the_document() -> None:
    """A document that filled most of the context was answered, and the question after it
    left it out (the answer reserve is a quarter of the context): the model answered without
    it. The whole conversation stays while the answer still has a sixteenth of the context."""
    from workstation.core.engine_api import fit_history

    def count(kept: list[dict[str, str]]) -> int:
        return sum(len(m["content"]) + 3 for m in kept)

    talk = [{"role": "user", "content": "Read this contract: " + "d" * 1380},
            {"role": "assistant", "content": "a" * 100}, {"role": "user", "content": "Say hello in French."}]
    assert count(talk) + 500 > 2000  # over the room with a quarter kept for the answer
    assert fit_history(talk, count, 2000, 500) == (talk, 0)
    assert fit_history(talk, count, 2000, 500, shift=False) == (talk, 0)
    assert fit_history(talk, count, 2000, 500, most=1500)[1] == 2  # a server's prompt limit still holds
    longer = [*talk, {"role": "assistant", "content": "a" * 400}, {"role": "user", "content": "And in Turkish?"}]
    assert count(longer) + 2000 // 16 > 2000  # less than a sixteenth left: the oldest go, as before
    assert fit_history(longer, count, 2000, 500)[1] == 2


@pytest.mark.parametrize("entry", ["workstation.core.engine", "workstation.tui.app", "workstation.cli"])
def test_llama_cpps_libraries_load_before_pythons_decimal(entry: str) -> None:
    """On the H200 a model load crashed in every process that had imported the engine's modules
    (numpy, jinja2, decimal, yaml, ...) before llama.cpp's libraries, and in none that loaded them
    first. Each way into the product loads llama.cpp first now; `decimal` stands for the others
    (the engine loads it through `statistics`, the app through Textual)."""
    code = (f"import sys, {entry}, statistics\n"
            "names = list(sys.modules)\n"
            "print(names.index('llama_cpp') < names.index('decimal'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True"


def test_a_batch_larger_than_llama_cpps_is_an_error_not_an_abort(smollm2_path) -> None:
    """llama.cpp ends the whole process (GGML_ASSERT n_tokens_all <= n_batch) on a batch larger
    than its n_batch: bench/load.py's reference did that on the GPU. The runtime says so first."""
    from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings

    m = LoadedModel(smollm2_path, RuntimeSettings(n_ctx=512, n_threads=1, n_batch=32))
    batch = Batch(40)
    try:
        for i in range(33):
            batch.add(1, i, 0, i == 32)
        with pytest.raises(EngineError, match="a batch of 33 tokens is more than the 32"):
            m.decode(batch)
        batch.clear()
        for i in range(32):  # as many as it reads at once: decoded
            batch.add(1, i, 0, i == 31)
        m.decode(batch)
        assert m.seq_pos_max(0) == 31
    finally:
        batch.close()
        m.close()


def test_a_failed_check_inside_llama_cpp_prints_no_debugger_backtrace(smollm2_path) -> None:
    """A GGML_ASSERT ends the process; ggml first attached gdb (there is one here) and printed
    30-odd frames of C into the user's terminal (over the app's screen, from its engine process).
    The product turns that off; WORKSTATION_LLAMA_LOG, the developers' switch, keeps it."""
    code = ("import sys\nimport workstation\nfrom pathlib import Path\n"
            "from workstation.core.runtime import LoadedModel, RuntimeSettings\n"
            "m = LoadedModel(Path(sys.argv[1]), RuntimeSettings(n_ctx=256, n_threads=1))\n"
            "m.seq_cp(0, 100000)\n")  # no such sequence: GGML_ASSERT(seq_id_dst < ...)
    env = {k: v for k, v in os.environ.items() if k not in ("GGML_NO_BACKTRACE", "WORKSTATION_LLAMA_LOG")}
    proc = subprocess.run([sys.executable, "-c", code, str(smollm2_path)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == -signal.SIGABRT
    assert "GGML_ASSERT(seq_id_dst" in proc.stderr
    said = proc.stdout + proc.stderr  # (gdb writes its frames to standard output)
    assert "[Inferior" not in said and "#1 " not in said and "libggml" not in said.split("GGML_ASSERT")[1]


def test_a_load_says_its_progress_once_a_percent(smollm2_path: Path) -> None:
    """llama.cpp reports a load's progress at every tensor: 273 calls for the 135M model, each
    sent down the engine's pipe and redrawn in the app's status bar. Each whole percent is said
    once now, the end always."""
    from workstation.core.runtime import LoadedModel, RuntimeSettings

    said: list[float] = []
    LoadedModel(smollm2_path, RuntimeSettings(n_ctx=256, n_threads=1), progress=said.append).close()
    percents = [int(f * 100) for f in said]
    assert said[0] == 0.0 and said[-1] == 1.0
    assert percents == sorted(set(percents)), percents  # one call a percent, going up
    assert 2 < len(said) <= 101


def test_the_line_under_a_reply_keeps_every_figure_where_it_fits_exactly(engine: Engine) -> None:
    """A chat exactly as wide as the line under a reply keeps all its figures (each is left out
    only where the line would not fit); one column less leaves the first of them out."""
    from workstation.core.metrics import figures_line
    from workstation.core.profiles import Sampling

    m = engine.run_chat([{"role": "user", "content": "Hi"}], Sampling(temperature=0.0, max_tokens=4)).metrics
    whole = figures_line(m)
    assert figures_line(m, width=len(whole)) == whole
    assert figures_line(m, width=len(whole) - 1) != whole


def test_a_first_message_under_long_instructions_is_no_read_again(engine: Engine) -> None:
    """A conversation's first reply under a long system prompt (256+ tokens) was counted by F5
    among the replies that "read the whole conversation again": there was no conversation before."""
    from workstation.core.metrics import read_again_n, reread

    rules = " ".join(f"Rule {i}: answer politely and briefly, in plain words for office staff."
                     for i in range(22))  # 380 tokens: over 300 (it was 516, each turn read them whole)
    first = [{"role": "system", "content": rules}, {"role": "user", "content": "Hello."}]
    engine.reset()
    m = finished_turn(engine.stream_chat(first, dataclasses.replace(engine.profile.sampling, max_tokens=4))).metrics
    assert m.prompt_n > 300 and m.cache_n == 0, m
    assert read_again_n(m) == 0 and not reread(m), m
    # a conversation's later message, read whole after a reset (a switch, a restart): a re-read as before
    later = [*first, {"role": "assistant", "content": "Hello! How can I help?"}, {"role": "user", "content": "Thanks."}]
    engine.reset()
    m = finished_turn(engine.stream_chat(later, dataclasses.replace(engine.profile.sampling, max_tokens=4))).metrics
    assert read_again_n(m) > 300 and reread(m), m
