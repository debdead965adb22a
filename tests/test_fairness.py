"""Fair admission between API keys, in the pure planner (``slots.admit``), without a model:
round by round between owners, at most ``max_parallel`` slots per owner, FIFO within one
(requests without an owner: ``test_slots.py::test_admission_is_fifo_skips_cancelled_...``)."""

from __future__ import annotations

import collections

from workstation.core.profiles import Sampling
from workstation.core.slots import Owner, Request, Slot, admit


def req(rid: int, owner: Owner | None) -> Request:
    return Request(prompt=[rid, rid], sampling=Sampling(), sink=lambda e: None, max_tokens=8, id=rid, owner=owner)


def finish(slot: Slot) -> None:
    slot.req = None
    slot.prefilling = slot.fresh = False


ALICE, BOB = Owner("alice"), Owner("bob")


def test_a_second_person_is_admitted_before_the_first_persons_backlog() -> None:
    slots = [Slot(0), Slot(1), Slot(2), Slot(3)]
    alice = [req(i, ALICE) for i in range(1, 11)]  # ten long requests first
    bob = req(11, BOB)  # then one from Bob
    waiting = collections.deque([*alice, bob])
    admitted, _ = admit(slots, waiting)
    served = [s.req for s in admitted]
    # the slots go round: Alice's oldest, Bob's, then Alice again
    assert served == [alice[0], bob, alice[1], alice[2]]
    assert list(waiting) == alice[3:]


def test_a_freed_slot_goes_to_the_person_holding_fewest() -> None:
    slots = [Slot(0), Slot(1), Slot(2)]
    waiting = collections.deque([req(i, ALICE) for i in range(1, 6)])
    admit(slots, waiting)  # Alice holds all three slots, two of hers wait
    assert {s.req.owner for s in slots if s.req} == {ALICE}
    late = req(6, BOB)
    waiting.append(late)
    finish(slots[1])  # one of Alice's requests ends
    admitted, _ = admit(slots, waiting)
    assert [s.req for s in admitted] == [late]  # Bob's newer request goes ahead of Alice's older
    assert [r.id for r in waiting] == [4, 5]


def test_with_one_slot_the_people_take_turns() -> None:
    """A finished request's slot goes to the person admitted least recently, not to the
    oldest request: Bob does not wait behind Alice's whole backlog."""
    slot = Slot(0)
    a1, a2, a3, b1, b2 = req(1, ALICE), req(2, ALICE), req(3, ALICE), req(4, BOB), req(5, BOB)
    waiting = collections.deque([a1, a2, a3, b1, b2])
    order = []
    while waiting:
        admitted, _ = admit([slot], waiting)
        assert len(admitted) == 1
        order.append(slot.req.id)
        finish(slot)
    assert order == [1, 4, 2, 5, 3]


def test_max_parallel_caps_one_owner_and_leaves_slots_to_others() -> None:
    capped = Owner("alice", max_parallel=2)
    slots = [Slot(i) for i in range(4)]
    waiting = collections.deque([req(i, capped) for i in range(1, 6)])
    admitted, _ = admit(slots, waiting)
    assert len(admitted) == 2  # two slots stay free although Alice has three more waiting
    assert [r.id for r in waiting] == [3, 4, 5]
    assert admit(slots, waiting) == ([], [])  # still at her cap
    bob = req(6, BOB)
    waiting.append(bob)
    admitted, _ = admit(slots, waiting)
    assert [s.req for s in admitted] == [bob]
    finish(admitted[0])
    finish(slots[0])  # one of Alice's ends: her next one takes its place
    admitted, _ = admit(slots, waiting)
    assert [s.req.id for s in admitted] == [3]
    assert sum(1 for s in slots if s.req and s.req.owner == capped) == 2


def test_three_owners_take_turns_and_each_keeps_its_own_order() -> None:
    carol = Owner("carol")
    slots = [Slot(i) for i in range(6)]
    order = [req(1, ALICE), req(2, ALICE), req(3, ALICE), req(4, BOB), req(5, BOB), req(6, carol)]
    waiting = collections.deque(order)
    admitted, _ = admit(slots, waiting)
    ids = [s.req.id for s in admitted]
    assert ids == [1, 4, 6, 2, 5, 3]
    for owner in (ALICE, BOB):
        mine = [i for i in ids if order[i - 1].owner == owner]
        assert mine == sorted(mine)


def test_a_cancelled_request_of_a_capped_owner_is_dropped_not_counted() -> None:
    capped = Owner("alice", max_parallel=1)
    slots = [Slot(0), Slot(1)]
    a1, a2 = req(1, capped), req(2, capped)
    a1.cancel()
    waiting = collections.deque([a1, a2])
    admitted, dropped = admit(slots, waiting)
    assert dropped == [a1]
    assert [s.req for s in admitted] == [a2]
    assert not waiting


def test_a_full_queue_pushes_out_the_newest_request_of_the_person_holding_most() -> None:
    from workstation.core.slots import queue_victim

    waiting = [req(1, ALICE), req(2, ALICE), req(3, BOB), req(4, ALICE)]
    assert queue_victim(waiting, BOB).id == 4  # alice holds 3, bob 1: her newest gives way
    assert queue_victim(waiting, Owner("carol")).id == 4
    assert queue_victim(waiting, ALICE) is None  # nobody gives way to the person holding most
    assert queue_victim([req(1, ALICE), req(2, BOB)], Owner("carol")) is None  # one each: fair
    assert queue_victim(waiting, None) is None  # no people's keys: first come, first served
