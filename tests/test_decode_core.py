"""The one decode core with several slots on the real SmolLM2 model, at 1 thread (llama.cpp's CPU
backend then computes a row of a batch bit for bit like a lone token, so greedy text must not
depend on what else was in the batch).

- greedy replies decoded together equal the same requests decoded alone;
- speculation per slot (lookup, as ``serve`` runs it with a speculative profile) gives the plain
  greedy text while drafting;
- a summary's map phase in 4 slots gives the chunk summaries of 1 slot, and the chunks share the
  instruction's cells instead of each computing them.
"""

from __future__ import annotations

import contextlib
import math
import queue
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import make_profile
from docmaker import honeybee_text

from workstation.core.documents import Document
from workstation.core.engine import Engine
from workstation.core.events import TurnFinished
from workstation.core.profiles import Sampling
from workstation.core.scheduler import Scheduler
from workstation.core.summarize import summarize_document
from workstation.core.summary_options import SummarizeOptions

PASTE = (
    "The committee met on Tuesday to review the budget for the coming year. It agreed to raise "
    "the travel allowance by five percent, to freeze hiring until March, and to move the annual "
    "meeting from Leeds to York."
)
PROMPTS = [
    "Name three colours of the rainbow.",
    "Repeat this text exactly, word for word:\n\n" + PASTE,
    "Write one sentence about the sea.",
    "Summarize in one sentence:\n\n" + PASTE,
]
GREEDY = Sampling(temperature=0.0, max_tokens=40, repeat_penalty=1.0)
GREEDY_ONE = Sampling(temperature=0.0, max_tokens=1, repeat_penalty=1.0)


def _together(sched: Scheduler, prompts: list[list[int]]) -> list[TurnFinished]:
    """Submit every prompt at once to a threaded scheduler and wait for all."""
    events: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
    for i, p in enumerate(prompts):
        sched.submit(p, GREEDY, lambda e, i=i: events.put((i, e)))
    out: dict[int, TurnFinished] = {}
    while len(out) < len(prompts):
        i, e = events.get(timeout=300)
        if isinstance(e, TurnFinished):
            out[i] = e
    return [out[i] for i in range(len(prompts))]


def _alone(sched: Scheduler, prompts: list[list[int]]) -> list[TurnFinished]:
    out = []
    for p in prompts:
        sched.reset()
        out.append(_together(sched, [p])[0])
    return out


def _same_up_to_near_ties(engine: Engine, prompt: list[int], alone: list[int], other: list[int]) -> None:
    """``other`` equals ``alone`` or departs from it only where the two choices were a near tie.
    Several sequences in one KV pool change llama.cpp's arithmetic by float rounding even at 1
    thread (the order in which attention visits cells follows where they were placed, and the
    batch's shapes change), so a top-2 gap of a few hundredths can flip; measured here, plain
    runs alone in a 4-slot context differ from run to run the same way. A real bug (wrong cells,
    positions or logits row) departs by whole logits."""
    d = next((i for i, (a, b) in enumerate(zip(alone, other, strict=False)) if a != b), None)
    if d is None and len(alone) == len(other):
        return
    if d is None:  # one ended where the other went on: its end of text against the other's token
        d = min(len(alone), len(other))
        longer = alone if len(alone) > len(other) else other
        logits = _logits_after(engine, prompt + longer[:d])
        ends = [int(t) for t in np.argsort(logits)[::-1][:5] if engine.model.is_eog(int(t))]
        assert ends, f"token {d}: one reply ended where no end of text was among the top 5 choices"
        gap = float(logits[longer[d]] - logits[ends[0]])
    else:
        logits = _logits_after(engine, prompt + alone[:d])
        gap = float(logits[alone[d]] - logits[other[d]])  # recomputed here: rounding differs again
    assert abs(gap) < 0.5, f"token {d}: the two choices are {gap:.3f} apart, not a near tie"


def _logits_after(engine: Engine, tokens: list[int]) -> Any:
    engine.reset()
    for _ in engine.stream_tokens(tokens, GREEDY_ONE):
        pass
    return engine.model.logits(-1)


@pytest.fixture(scope="module")
def plain(smollm2_path: Path) -> Any:
    with Scheduler(make_profile(threads=1, context=512), n_parallel=4) as sched:
        yield sched


@pytest.fixture(scope="module")
def reference(smollm2_path: Path) -> Any:
    with Engine(make_profile(threads=1, context=512)) as eng:
        yield eng


def _prompts(sched: Scheduler) -> list[list[int]]:
    return [sched.chat_tokens([{"role": "user", "content": p}]) for p in PROMPTS]


@pytest.fixture(scope="module")
def alone(plain: Scheduler) -> list[TurnFinished]:
    """PROMPTS' greedy replies, each decoded alone in the 4-slot scheduler (the reference the
    batched and the speculative runs are held to; decoded once for both)."""
    return _alone(plain, _prompts(plain))


def test_greedy_replies_decoded_together_equal_decoded_alone(
    plain: Scheduler, reference: Engine, alone: list[TurnFinished]
) -> None:
    prompts = _prompts(plain)
    plain.reset()
    decodes_before = plain.stats.n_decode_total
    together = _together(plain, prompts)
    for p, a, t in zip(prompts, alone, together, strict=True):
        _same_up_to_near_ties(reference, p, a.tokens, t.tokens)
    assert all(t.metrics.predicted_n > 0 for t in together)
    # they really shared batches: far fewer llama_decode calls than tokens generated
    tokens = sum(t.metrics.predicted_n for t in together)
    assert plain.stats.n_decode_total - decodes_before < tokens * 0.6


def test_speculative_slots_draft_and_keep_the_plain_greedy_text(
    plain: Scheduler, reference: Engine, alone: list[TurnFinished]
) -> None:
    prompts = _prompts(plain)
    expected = alone
    profile = make_profile(threads=1, context=512, speculative={"mode": "lookup", "draft_tokens": 6})
    with Scheduler(profile, n_parallel=4) as sched:
        for slot in sched.slots:
            slot.spec.adaptive = False  # draft at every step: exercise verification in the batch
        together = _together(sched, prompts)
        for p, a, t in zip(prompts, expected, together, strict=True):
            _same_up_to_near_ties(reference, p, a.tokens, t.tokens)
        drafted = [t.metrics.draft_n for t in together]
        assert sum(drafted) > 0 and together[1].metrics.draft_n_accepted > 0  # the quoting prompt
        for t in together:
            assert 0 <= t.metrics.draft_n_accepted <= t.metrics.draft_n
        # every slot's cells are exactly its prompt + reply (rejected drafts removed)
        for slot in sched.slots:
            if slot.tokens:
                assert sched.model.seq_pos_max(slot.seq) + 1 == len(slot.tokens)


def _summary(parallel: int) -> Any:
    profile = make_profile(threads=1, context=512, parallel=parallel, sampling={"max_tokens": 8})
    doc = Document(source="honeybees.txt", kind="text", text=honeybee_text(1))
    with Engine(profile) as eng:
        decodes_before = eng.core.stats.n_decode_total
        result = summarize_document(eng, doc, profile, options=SummarizeOptions(map_tokens=8, reduce_tokens=8, chunk_tokens=60))
        return result, eng.core.stats.n_decode_total - decodes_before


def test_summary_map_phase_runs_in_parallel_slots_sharing_the_instruction(smollm2_path: Path) -> None:
    one, decodes_one = _summary(1)
    four, decodes_four = _summary(4)
    assert len(four.chunks) == len(one.chunks) >= 4
    assert all(c.summary for c in four.chunks) and four.overall and not four.cancelled
    assert decodes_four < decodes_one * 0.7  # the chunks were decoded side by side
    # every chunk after the first reused the shared instruction from another slot's cells
    assert four.prefix_tokens > 20
    assert all(c.metrics is not None and c.metrics.cache_n >= four.prefix_tokens for c in four.chunks[1:])
    assert [c.prompt_tokens for c in four.chunks] == [c.prompt_tokens for c in one.chunks]


def test_turns_run_together_equal_turns_run_one_by_one(
    plain: Scheduler, reference: Engine, alone: list[TurnFinished]
) -> None:
    """``run_many`` (the summary's map phase, a batch) against the same turns one at a time."""
    conversations = [[{"role": "user", "content": p}] for p in PROMPTS]
    assert [reference.chat_prompt(c) for c in conversations] == _prompts(plain)  # alone's prompts
    with Engine(make_profile(threads=1, context=512, parallel=4)) as eng:
        together = eng.run_many(conversations, GREEDY)
    for conv, a, t in zip(conversations, alone, together, strict=True):
        _same_up_to_near_ties(reference, reference.chat_prompt(conv), a.tokens, t.tokens)


def test_a_failing_sink_or_a_cancelled_waiting_request_costs_no_one_else(smollm2_path: Path) -> None:
    """A caller whose events cannot be delivered (a closed event loop) is dropped, the decode
    thread lives on; a request cancelled while it waits frees its queue place at once."""
    from workstation.core.scheduler import QueueFull

    with Scheduler(make_profile(threads=1, context=512), n_parallel=1, max_queue=1) as sched:
        prompt = _prompts(sched)[0]

        def broken(event: object) -> None:
            raise RuntimeError("Event loop is closed")

        sched.submit(prompt, GREEDY, broken)
        for _ in range(30000):  # the broken caller is dropped at its first event
            if not sched.waiting and sched.requests_processing == 0:
                break
            threading.Event().wait(0.01)
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        first = sched.submit(prompt, Sampling(temperature=0.0, max_tokens=400, repeat_penalty=1.0,
                                               ignore_eos=True), events.put)
        waiting: queue.SimpleQueue[Any] = queue.SimpleQueue()
        second = sched.submit(prompt, GREEDY, waiting.put)
        with pytest.raises(QueueFull) as full:
            sched.submit(prompt, GREEDY, lambda e: None)
        assert str(full.value) == "This server is full: it answers 1 request at once and keeps 1 request waiting; " \
                                  "try again shortly."
        sched.cancel(second)
        # at once, while the first still decodes: asserted by the first's events so far, not by
        # a time (5 s, on a busy machine, could run out where nothing waited)
        done = waiting.get(timeout=300)
        assert isinstance(done, TurnFinished) and done.metrics.stop_reason == "cancelled"
        so_far: list[Any] = []
        with contextlib.suppress(queue.Empty):
            while True:
                so_far.append(events.get_nowait())
        assert not any(isinstance(e, TurnFinished) for e in so_far), "the cancel waited for the first to end"
        third = sched.submit(prompt, GREEDY, lambda e: None)  # its place was free
        sched.cancel(third)
        sched.cancel(first)
        while not isinstance(events.get(timeout=300), TurnFinished):
            pass
        assert sched._thread is not None and sched._thread.is_alive()
        again = list(sched.stream(prompt, GREEDY))
        assert isinstance(again[-1], TurnFinished) and again[-1].text


def test_pieces_are_right_while_another_thread_detokenizes(smollm2_path: Path) -> None:
    """serve's HTTP threads call piece() while the decode thread streams (a shared buffer
    handed one caller another's bytes)."""
    with Engine(make_profile(threads=1, context=512)) as eng:
        model = eng.model
        expected = {t: model.piece(t) for t in range(0, 4000, 7)}
        wrong: list[int] = []
        stop = threading.Event()

        def hammer() -> None:
            while not stop.is_set():
                model.detokenize(list(range(1000, 1400)))

        other = threading.Thread(target=hammer)
        other.start()
        try:
            for _ in range(5):
                wrong += [t for t, piece in expected.items() if model.piece(t) != piece]
        finally:
            stop.set()
            other.join()
        assert wrong == []


def test_a_full_queue_says_to_try_again_when_the_slots_will_have_cleared_it(smollm2_path: Path) -> None:
    """Retry-After was a second per waiting request: 18 s for 17 short requests the slots
    cleared in 1.4 s, and the openai client sleeps that long before each retry. It is now the
    queue served at the pace requests have held a slot lately (measured by the requests
    served; set here so that nothing depends on this machine's speed)."""
    from workstation.core.scheduler import QueueFull

    short = Sampling(temperature=0.0, max_tokens=1, repeat_penalty=1.0)
    with Scheduler(make_profile(threads=1, context=512), n_parallel=1, max_queue=8) as sched:
        prompt = _prompts(sched)[0]
        list(sched.stream(prompt, short))
        assert sched._slot_hold_s is not None and sched._slot_hold_s > 0  # measured from what it served
        first = sched.submit(prompt, Sampling(temperature=0.0, max_tokens=400, repeat_penalty=1.0,
                                               ignore_eos=True), lambda e: None)
        for _ in range(30000):  # in its slot, so that the queue stays as it is below
            if sched.requests_processing == 1:
                break
            threading.Event().wait(0.01)
        queued = [sched.submit(prompt, short, lambda e: None) for _ in range(8)]
        ahead = len(sched.waiting) + 1
        for pace, expected in ((0.05, 1), (0.5, math.ceil(0.5 * ahead)), (10.0, 30)):
            sched._slot_hold_s = pace
            with pytest.raises(QueueFull) as refused:
                sched.submit(prompt, short, lambda e: None)
            assert refused.value.retry_after_s == expected, (pace, refused.value.retry_after_s)
        for req in (*queued, first):
            sched.cancel(req)


def test_a_prompt_that_fills_its_slot_is_refused_at_submit(plain: Scheduler) -> None:
    """A prompt of exactly a slot's context was queued with no room left for one reply token;
    it is refused at once, naming the most a request may hold."""
    from workstation.core.scheduler import PromptTooLong

    with pytest.raises(PromptTooLong, match=f"at most {plain.slot_ctx - 1} prompt tokens"):
        plain.submit([1] * plain.slot_ctx, GREEDY, lambda e: None)


def test_serve_counts_the_model_it_loaded_as_free_as_the_chat_does(plain: Scheduler, reference: Engine) -> None:
    """serve's notes once its model loaded (``print_load_notes``) counted the memory that model
    holds as taken (the chat's, and the app's switch, count it as free: ``memory_held``): its
    own K/V cache could make it say "runs slowly" of a model that ran fast. Its scheduler says
    what it loaded, as an engine does, and what it holds is its slots' context together."""
    import dataclasses

    from workstation.core.profile_plan import memory_held_by, plan_for_profile

    held = memory_held_by(plain.profile, plain)
    assert held is not None and held.model == plain.model_name == reference.info().model_name
    assert plain.info().n_ctx == 512 and plain.info().parallel == 4
    together = plan_for_profile(dataclasses.replace(plain.profile, context=4 * 512))
    cpu = next(d for d in together.devices if d.kind == "cpu")
    assert held.ram_bytes == cpu.kv_cache_bytes + cpu.compute_bytes + together.repack_bytes
    one = memory_held_by(reference.profile, reference)
    assert one is not None and 0 < one.ram_bytes < held.ram_bytes  # one slot's 512 tokens: less
