"""The decode core's planning half, without a model: admission, slot choice, prefix reuse,
the batch plan, and stop strings."""

from __future__ import annotations

import collections

from workstation.core.profiles import Sampling
from workstation.core.slots import (
    MIN_SHARED_WAIT,
    Request,
    Slot,
    admit,
    choose_slot,
    common_prefix,
    moved_runs,
    plan_step,
    settle_prefix,
)
from workstation.core.stop_strings import StopMatcher


def req(prompt: list[int], rid: int) -> Request:
    return Request(prompt=prompt, sampling=Sampling(), sink=lambda e: None, max_tokens=8, id=rid)


def test_common_prefix_with_limit() -> None:
    assert common_prefix([1, 2, 3, 4], [1, 2, 3, 9]) == 3
    assert common_prefix([1, 2, 3], [1, 2, 3]) == 3
    assert common_prefix([1, 2, 3], [1, 2, 3], limit=2) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([5, 2], [1, 2]) == 0
    long = list(range(1000))
    assert common_prefix(long, [*long[:777], -1]) == 777


def test_a_free_slot_that_holds_the_prefix_is_chosen_else_the_least_recently_used() -> None:
    a, b, c = Slot(0, [1, 2, 3], last_used=5.0), Slot(1, [7, 8], last_used=1.0), Slot(2, [], last_used=3.0)
    assert choose_slot([a, b, c], [a, b, c], [1, 2, 3, 4]) is a
    assert choose_slot([a, b, c], [a, b, c], [9, 9]) is c  # nothing shared: an empty slot loses nothing
    c.tokens = [5]
    assert choose_slot([a, b, c], [a, b, c], [9, 9]) is b  # ... else the oldest use loses its cache
    a.req = req([1], 1)  # the best cache is busy: its prefix is copied into the least recently used free slot
    assert choose_slot([a, b, c], [b, c], [1, 2, 3, 4]) is b


def test_a_conversation_keeps_its_slot_when_another_shares_only_its_instructions() -> None:
    """Two people's conversations begin with the same instructions: the second went to the first
    one's slot (its longest prefix, the instructions) and wrote over its cells, and each turn of
    either read its whole conversation again (serve, 18 of 932 tokens cached). Past the context
    (its oldest messages left out), a conversation's own cells further on count too."""
    instructions, first, second = list(range(10)), list(range(100, 300)), list(range(500, 700))
    a, b = Slot(0, instructions + first, last_used=1.0), Slot(1, [], last_used=0.0)
    assert choose_slot([a, b], [a, b], [*instructions, *second]) is b  # the instructions copied from a
    b.tokens = instructions + second
    assert choose_slot([a, b], [a, b], [*instructions, *first, 7]) is a
    assert choose_slot([a, b], [a, b], [*instructions, *second[100:], 7]) is b  # moved: 100 cells reused


def test_a_document_sharing_only_the_instructions_goes_to_the_stalest_slot_not_the_last_ones() -> None:
    """bob's document, then alice's with the same 44 tokens of instructions, all slots used once:
    alice's went into bob's slot (its own 44 cells preferred to a copy of them), wrote over his ~470
    tokens though a staler slot was free, and bob's same document asked again was read again (44 of
    ~520 cached). The instructions are copied into the least recently used slot instead; a prompt
    that goes on from a slot's cells (its own reply asked again, a conversation's next turn) keeps it."""
    template, instruction = list(range(30)), list(range(1000, 1014))
    doc_a, doc_b = list(range(2000, 2470)), list(range(3000, 3470))
    stale = [Slot(i, [*template, *range(5000 + 500 * i, 5400 + 500 * i)], last_used=float(i)) for i in range(3)]
    bobs = Slot(3, [*template, *instruction, *doc_a, 7], last_used=10.0)
    slots = [*stale, bobs]
    assert choose_slot(slots, slots, [*template, *instruction, *doc_b]) is stale[0]
    assert choose_slot(slots, slots, [*template, *instruction, *doc_a]) is bobs  # asked again: his own slot
    assert choose_slot(slots, slots, [*template, *instruction, *doc_a, 7, 8, 9]) is bobs  # the next turn
    assert choose_slot(slots, slots, [*template, *instruction, *doc_a[:300], 9]) is bobs  # most of it kept


def test_admission_is_fifo_skips_cancelled_and_leaves_the_rest_waiting() -> None:
    slots = [Slot(0), Slot(1)]
    first, gone, second, third = req([1, 2], 1), req([3], 2), req([4], 3), req([5], 4)
    gone.cancel()
    waiting = collections.deque([first, gone, second, third])
    admitted, dropped = admit(slots, waiting)
    assert [s.req for s in admitted] == [first, second]
    assert dropped == [gone]
    assert list(waiting) == [third]
    assert all(s.prefilling and s.fresh for s in admitted)
    assert admit(slots, waiting) == ([], [])  # no free slot: third keeps waiting


def test_settle_keeps_its_own_prefix_or_copies_a_longer_one() -> None:
    prompt = [1, 2, 3, 4, 5, 6]
    own = Slot(0, [1, 2, 9, 9])
    donor = Slot(1, [1, 2, 3, 4, 7])
    own.req = req(prompt, 2)
    action = settle_prefix(own, [own, donor])
    assert action is not None and action.copy_from is donor and action.keep == 4
    donor.tokens = [1, 8]
    action = settle_prefix(own, [own, donor])
    assert action is not None and action.copy_from is None and action.keep == 2
    # a prompt wholly in the cache still evaluates its last token (for the first logits)
    own.tokens = list(prompt)
    action = settle_prefix(own, [own, donor])
    assert action is not None and action.keep == len(prompt) - 1


def test_a_request_waits_for_an_earlier_slot_prefilling_the_same_prefix() -> None:
    shared = list(range(100, 160))
    leader, follower = Slot(0), Slot(1)
    leader.req, leader.prefilling = req([*shared, 1, 2], 1), True
    follower.req, follower.prefilling = req([*shared, 3, 4], 2), True
    assert settle_prefix(follower, [leader, follower]) is None  # wait: the leader computes it
    assert settle_prefix(leader, [leader, follower]) is not None  # the earlier one never waits
    leader.tokens = shared[:30]  # halfway: still worth waiting
    assert settle_prefix(follower, [leader, follower]) is None
    leader.tokens = shared[: 60 - MIN_SHARED_WAIT]  # just MIN_SHARED_WAIT left: still worth waiting
    assert settle_prefix(follower, [leader, follower]) is None
    leader.tokens = shared[: 60 - MIN_SHARED_WAIT + 1]  # too little left to wait for: copy what is there
    action = settle_prefix(follower, [leader, follower])
    assert action is not None and action.copy_from is leader and action.keep == 60 - MIN_SHARED_WAIT + 1
    leader.tokens = [*shared, 1]  # done: copy it
    action = settle_prefix(follower, [leader, follower])
    assert action is not None and action.copy_from is leader and action.keep == len(shared)
    # too little in common to be worth a step's wait
    other = Slot(2)
    other.req, other.prefilling = req([*shared[: MIN_SHARED_WAIT - 1], 9], 3), True
    fresh_leader = Slot(3)
    fresh_leader.req, fresh_leader.prefilling = req([*shared[: MIN_SHARED_WAIT - 1], 8], 0), True
    assert settle_prefix(other, [fresh_leader, other]) is not None


def test_plan_puts_generating_slots_first_then_prompt_chunks_oldest_first() -> None:
    gen = Slot(0, [1, 2, 3])
    gen.req, gen.pending, gen.drafts = req([1, 2], 1), 42, [43, 44]
    old = Slot(1, [5])
    old.req, old.prefilling = req([5] + list(range(10)), 2), True
    new = Slot(2)
    new.req, new.prefilling = req(list(range(20)), 3), True
    waiting_fresh = Slot(3)
    waiting_fresh.req, waiting_fresh.prefilling, waiting_fresh.fresh = req([1], 4), True, True
    plan = plan_step([new, waiting_fresh, old, gen], capacity=16)
    first = plan.entries[0]
    assert first.slot is gen and first.tokens == [42, 43, 44] and first.pos == 3 and first.all_logits
    assert plan.entries[1].slot is old and plan.entries[1].tokens == list(range(10))
    assert plan.entries[1].pos == 1 and plan.entries[1].ends_prompt
    # what is left of the batch: a first chunk of the newer prompt, no logits yet
    assert plan.entries[2].slot is new and plan.entries[2].tokens == list(range(3))
    assert not plan.entries[2].ends_prompt and not plan.entries[2].all_logits
    assert all(e.slot is not waiting_fresh for e in plan.entries)
    assert plan.n_tokens == 16 and plan.n_drafts == 2 and plan.n_generating == 1 and plan.has_prefill


def test_plan_cuts_drafts_to_the_batch() -> None:
    slots = []
    for i in range(3):
        s = Slot(i, [1])
        s.req, s.pending, s.drafts = req([1], i + 1), 7, [8, 9, 10]
        slots.append(s)
    plan = plan_step(slots, capacity=6)
    assert [len(e.tokens) for e in plan.entries] == [4, 2]
    assert plan.n_tokens == 6


def test_stop_strings_hold_back_a_possible_start_and_cut_at_the_match() -> None:
    m = StopMatcher(["</answer>", "\n\n"])
    assert m.push("The total is 4") == ("The total is 4", False)
    assert m.push("2 </ans") == ("2 ", False)  # "</ans" could start the stop string
    assert m.push("wer> more") == ("", True)
    m = StopMatcher(["STOP"])
    assert m.push("no ST") == ("no ", False)
    assert m.push("ring") == ("STring", False)  # it was not the stop string after all
    assert m.flush() == ""
    m = StopMatcher([])
    assert m.push("anything") == ("anything", False)
    m = StopMatcher(["\n\n"])
    assert m.push("a\n") == ("a", False)
    assert m.flush() == "\n"


def test_the_earliest_stop_string_cuts_and_an_empty_one_is_ignored() -> None:
    """With two stop strings in the text the reply was cut at the later one ("hello " shown
    before "world", past "lo"), and a request's ``"stop": [""]`` ended every reply empty."""
    assert StopMatcher(["world", "lo"]).push("hello world") == ("hel", True)
    assert StopMatcher(["", "END"]).push("an answer END more") == ("an answer ", True)
    assert StopMatcher([""]).push("an answer") == ("an answer", False)


def test_a_request_for_a_busy_slot_waits_and_lets_others_pass() -> None:
    slots = [Slot(0), Slot(1)]
    slots[1].req = req([9], 1)  # slot 1 is busy
    pinned, other = req([1, 2], 2), req([3], 3)
    pinned.id_slot = 1
    waiting = collections.deque([pinned, other])
    admitted, _ = admit(slots, waiting)
    assert [(s.seq, s.req) for s in admitted] == [(0, other)] and list(waiting) == [pinned]
    assert other.id_slot == 0  # admission records the slot it got
    slots[1].req = None
    admitted, _ = admit(slots, waiting)
    assert [(s.seq, s.req) for s in admitted] == [(1, pinned)]


def test_cells_found_again_further_on_are_moved_in_runs_and_short_ones_are_not() -> None:
    """A conversation whose oldest messages were left out: its kept messages' cells are found
    again (llama-server's cache reuse search), runs shorter than ``min_run`` are read again,
    and the prompt's last token is always left to read (its logits start the reply)."""
    sys_, old, kept, reply, new = [1] * 3, list(range(100, 140)), list(range(200, 280)), [7, 8], list(range(300, 310))
    cached = sys_ + old + kept + reply
    prompt = sys_ + kept + reply + new
    assert moved_runs(cached, prompt, start=3, min_run=8) == [(43, 3, 82)]  # the kept messages and the reply
    assert moved_runs(cached, prompt, start=3, min_run=83) == []  # too short a run to move
    # a run that reaches the prompt's end leaves its last token to read
    assert moved_runs(cached, sys_ + kept, start=3, min_run=8) == [(43, 3, 79)]
    # two runs, back to back in the prompt: a gap in the cells between them is dropped
    gap = [5] * 20
    assert moved_runs(sys_ + old + kept[:40] + gap + kept[40:] + reply, prompt, start=3, min_run=8) == [
        (43, 3, 40), (103, 43, 42)]
    # ids that are no vocabulary's (past 2**28, below zero) are told apart too
    big, other = [2**28 + 1] * 10, [2**31 - 1] * 10
    assert moved_runs(sys_ + big + other + [-1] * 9, sys_ + other + [-2] * 9 + [9], start=3, min_run=8) == [(13, 3, 10)]
