"""Conversations keep their KV cache on disk: restored after a restart, never trusted blindly.

Real SmolLM2 at 1 thread (a restored prefix and a recomputed one then give the same greedy
text), real files; a damaged, truncated, foreign or other-model state file is ignored with one
warning and a normal prefill.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_profile, wait_until, write_profile_file

from workstation.core.disk_budget import evict_least_recent
from workstation.core.engine import Engine
from workstation.core.errors import EngineError
from workstation.core.events import TokenDelta, TurnFinished, finished_turn
from workstation.core.kv_state import KvStateStore, NotSaved, SavedState, StateKey
from workstation.core.profiles import Constraints, Sampling
from workstation.core.scheduler import Scheduler
from workstation.core.store import ConversationStore

ROOT = Path(__file__).resolve().parents[1]
NOTE = (
    "Meeting notes. The committee met on Tuesday to review the budget for the coming year. It "
    "agreed to raise the travel allowance by five percent, to freeze hiring until March, and to "
    "move the annual meeting from Leeds to York. Members asked the treasurer to publish the "
    "accounts monthly and to report on the new printers, which need a staff card from next month."
)
FIRST = [{"role": "user", "content": NOTE + "\n\nWhat did the committee decide about hiring?"}]
GREEDY = Sampling(temperature=0.0, max_tokens=12, repeat_penalty=1.0)


def _profile():  # noqa: ANN202
    return make_profile(threads=1, context=1024)


def _second(first_reply: str) -> list[dict[str, str]]:
    return [*FIRST, {"role": "assistant", "content": first_reply}, {"role": "user", "content": "And the meeting?"}]


@pytest.fixture(scope="module")
def _saved_once(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """One turn in an engine that keeps state, closed (state saved) in a data folder of its
    own; the reply and the answer to the next turn computed without any cache. Made once: the
    tests that damage or read the state get copies."""
    data = tmp_path_factory.mktemp("saved-state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORKSTATION_DATA", str(data))
        with Engine(_profile(), keep_state=True) as eng:
            first = eng.run_chat(FIRST, GREEDY).text
        folder = KvStateStore().folder
    with Engine(_profile()) as cold:
        expected = cold.run_chat(_second(first), GREEDY).text
    return folder, first, expected


@pytest.fixture
def saved(_saved_once: tuple[Path, str, str]) -> tuple[str, str]:
    """The saved state, copied into this test's data folder (its mode kept)."""
    folder, first, expected = _saved_once
    here = KvStateStore().folder
    shutil.copytree(folder, here)
    return first, expected


def _state_files() -> list[Path]:
    return sorted(KvStateStore().folder.glob("*.kv"))


def test_a_reopened_conversation_restores_its_cells(saved: tuple[str, str]) -> None:
    first, expected = saved
    assert len(_state_files()) == 1
    assert _state_files()[0].stat().st_mode & 0o777 == 0o600  # a conversation's text: its owner's only
    assert KvStateStore().folder.stat().st_mode & 0o777 == 0o700  # (it was 755: anyone listed the states)
    with Engine(_profile(), keep_state=True) as eng:
        n_prompt = len(eng.chat_prompt(_second(first)))
        final = eng.run_chat(_second(first), GREEDY)
        m = final.metrics
        assert m.restored_n > 60 and m.cache_n == m.restored_n
        assert m.prompt_n + m.cache_n == n_prompt and m.prompt_n < 30  # only the new message
        assert final.text == expected  # the same greedy answer as without the cache
        assert eng.model.seq_pos_max(0) + 1 == len(eng.tokens)


def test_a_restore_keeps_a_reply_generated_as_other_tokens(smollm2_path: Path) -> None:
    """A state saved at a close or a profile switch ends with the reply as it was generated
    (" Ab" "on"), which its text read again need not give (" A" "bon"): the restore takes the
    reply too, not only the conversation up to its first such token."""
    mine = "conversation:/tmp/c.db:1"
    reply = "Abon de ne, Turkish: lütfen."
    asked = [*FIRST, {"role": "assistant", "content": reply}]
    with Engine(_profile(), keep_state=True) as eng:
        head = eng.chat_prompt(FIRST)
        written = head + [t for ch in reply for t in eng.model.tokenize(ch, add_special=False, parse_special=False)]
        assert eng.chat_prompt(asked) != written  # the same text, other tokens
        finished_turn(eng.stream_tokens(written, GREEDY, tag=mine))
        eng.reset()  # saved, and the slot emptied: the next turn's cells come from the file
        m = finished_turn(eng.stream_chat([*asked, {"role": "user", "content": "And the meeting?"}], GREEDY,
                                          tag=mine)).metrics
        # without taking the saved tokens, the restore stopped at the reply's second token
        assert m.restored_n >= len(written), m


def test_forgetting_a_conversation_drops_its_cells_and_its_files(smollm2_path: Path) -> None:
    """A deleted conversation's cells go: its files on disk (any owner's stay), and the slot's
    copy in memory, which closing the engine would have saved again."""
    mine, other = "conversation:/tmp/c.db:1", "conversation:/tmp/c.db:2"
    other_turn = [{"role": "user", "content": NOTE.replace("committee", "board") + " Hiring?"}]
    with Engine(_profile(), keep_state=True) as eng:
        finished_turn(eng.stream_chat(other_turn, GREEDY, tag=other))
        finished_turn(eng.stream_chat(FIRST, GREEDY, tag=mine))  # takes the slot: other's cells saved
        assert eng.save_state() == 1  # mine, while its cells stay in the slot
        assert sorted(e.tag for e in KvStateStore().entries()) == [mine, other]
        # its oldest messages dropped to fit its context (or one edited): its earlier state no
        # longer starts what it sends and can never be used again; the newer one replaces it
        later = [{"role": "user", "content": NOTE.replace("Tuesday", "Monday") + " And the meeting?"}]
        finished_turn(eng.stream_chat(later, GREEDY, tag=mine))
        assert eng.save_state() == 1
        (kept,) = (e for e in KvStateStore().entries() if e.tag == mine)
        prompt = eng.chat_prompt(later)
        assert kept.tokens[: len(prompt)] == prompt
        assert len(_state_files()) == 2  # another conversation's state stays
        # the same conversation under other instructions (F3: another profile of the same model
        # file) is kept beside it: going back to the first profile restores its cells
        quoting = [{"role": "system", "content": "You edit and quote office text exactly."}, *later]
        finished_turn(eng.stream_chat(quoting, GREEDY, tag=mine))
        assert eng.save_state() == 1
        assert sorted(e.tag for e in KvStateStore().entries()) == [mine, mine, other]
        back = finished_turn(eng.stream_chat([*later, {"role": "user", "content": "Who chairs it?"}], GREEDY, tag=mine))
        # (restored: the question to its end; the opening of a reply after it is another message here)
        assert back.metrics.restored_n >= len(prompt) - 3, back.metrics
        assert eng.forget(mine) == 2
        assert eng.tokens == [] and eng.model.seq_pos_max(0) < 0
        assert [e.tag for e in KvStateStore().entries()] == [other]
    assert [e.tag for e in KvStateStore().entries()] == [other]  # closing saved nothing of mine
    assert KvStateStore().forget(other) == 1 and not _state_files()


def test_a_long_documents_parts_are_not_saved_a_one_part_document_is(smollm2_path: Path) -> None:
    """The parts of a document summarized in several were each saved as a state (up to the whole
    context each: GBs for an 8B model) that nobody comes back to; only a document in one part,
    which questions continue from, is kept."""
    from docmaker import honeybee_text

    from workstation.core.documents import Document
    from workstation.core.summarize import summarize_document
    from workstation.core.summary_options import SummarizeOptions

    profile = make_profile(threads=1, context=1024, sampling={"max_tokens": 8})
    long_doc = Document(source="hive.txt", kind="text", text=honeybee_text(1))
    with Engine(profile, keep_state=True) as eng:
        parts = summarize_document(eng, long_doc, profile,
                                   options=SummarizeOptions(map_tokens=8, reduce_tokens=8, chunk_tokens=60))
        assert len(parts.chunks) >= 3 and parts.reduce_steps and not parts.cancelled
        assert min(c.metrics.prompt_n + c.metrics.cache_n for c in parts.chunks) >= 64  # long enough to save
        one = summarize_document(eng, Document(source="note.txt", kind="text", text=NOTE), profile)
        assert len(one.chunks) == 1 and one.follow_up
        document_prompt = eng.chat_prompt(one.follow_up[:1])
        assert eng.save_state() == 1  # nobody's yet: the document and its summary
        # summarized again (another summary of it): its state replaces the first one's, which
        # only the other summary could continue (each summary of a document added a state)
        other = make_profile(threads=1, context=1024, sampling={"max_tokens": 8, "temperature": 1.5, "seed": 7})
        again = summarize_document(eng, Document(source="note.txt", kind="text", text=NOTE), other,
                                   options=SummarizeOptions(reduce_tokens=16))
        assert again.follow_up[0] == one.follow_up[0] and again.follow_up[1:] != one.follow_up[1:]
        assert eng.save_state() == 1
        (state,) = KvStateStore().entries()
        assert state.tokens[: len(document_prompt)] == document_prompt and state.tag is None
        # a conversation made of it claims its cells: saved with its tag, deleted with it
        assert eng.claim_cells("conversation:/tmp/c.db:7:1.0", one.follow_up[:1]) == 1
        assert eng.claim_cells("conversation:/tmp/c.db:8:1.0", one.follow_up[:1]) == 0  # owned now
    (kept,) = KvStateStore().entries()  # saved as the engine closed: the one-part document
    assert kept.tokens[: len(document_prompt)] == document_prompt
    assert kept.tag == "conversation:/tmp/c.db:7:1.0"
    with pytest.raises(EngineError, match="closed"):  # a closed engine says so (it crashed)
        eng.chat_prompt(one.follow_up[:1])


@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign", "other-model"])
def test_a_damaged_or_foreign_state_is_ignored(
    damage: str, saved: tuple[str, str], caplog: pytest.LogCaptureFixture, smollm2_path: Path
) -> None:
    first, expected = saved
    (path,) = _state_files()
    data = path.read_bytes()
    if damage == "flip":
        path.write_bytes(data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:])
    elif damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "foreign":
        path.write_bytes(b"GGUF" + bytes(range(256)) * 10)
    else:  # a state saved for another model file, renamed to look like this one's
        header_end = data.index(b"}") + 1
        start = data.index(b"{")
        header = json.loads(data[start:header_end])
        header["key"] = "0" * 16
        raw = json.dumps(header).encode()
        path.write_bytes(data[: start - 8] + len(raw).to_bytes(8, "little") + raw + data[header_end:])
    with caplog.at_level(logging.WARNING), Engine(_profile(), keep_state=True) as eng:
        final = eng.run_chat(_second(first), GREEDY)
    assert final.metrics.restored_n == 0 and final.text == expected
    if damage != "foreign":  # a foreign file is not even listed as a state
        assert "Ignored a saved KV state" in caplog.text


def test_the_other_slots_decode_while_a_saved_state_is_read() -> None:
    """A saved state is read and checked by a reader thread: a slot that is generating goes on
    while another slot's state is read, and that slot then answers from its restored cells as
    it would from a cold prefill. The file read is held up until the other slot has decoded."""
    with Scheduler(_profile(), n_parallel=2, threaded=False, kv_store=KvStateStore()) as sched:
        first = finished_turn(sched.stream(sched.chat_tokens(FIRST), GREEDY)).text
    with Scheduler(_profile(), n_parallel=2, threaded=False) as cold:
        expected = finished_turn(cold.stream(cold.chat_tokens(_second(first)), GREEDY)).text
    store = KvStateStore()
    gate, readers = threading.Event(), []
    real_load = store.load

    def held_load(key: StateKey, entry: SavedState) -> bytes:
        readers.append(threading.current_thread().name)
        assert gate.wait(120)
        return real_load(key, entry)

    store.load = held_load  # type: ignore[method-assignment]
    with Scheduler(_profile(), n_parallel=2, threaded=False, kv_store=store) as sched:
        a_events: list[object] = []
        b_events: list[object] = []
        other = sched.chat_tokens([{"role": "user", "content": "Count from one to fifty in words."}])
        sched.submit(other, Sampling(temperature=0.0, max_tokens=40, repeat_penalty=1.0), a_events.append,
                     ignore_eos=True)
        while not any(isinstance(e, TokenDelta) for e in a_events):
            sched.step()
        sched.submit(sched.chat_tokens(_second(first)), GREEDY, b_events.append)
        a_before = sum(isinstance(e, TokenDelta) for e in a_events)
        for _ in range(4):
            assert sched.step()
        assert readers and readers[0].startswith("kv-reader") and not b_events  # B waits for its file
        assert sum(isinstance(e, TokenDelta) for e in a_events) >= a_before + 4  # A went on meanwhile
        gate.set()
        while not any(isinstance(e, TurnFinished) for e in b_events):
            sched.step()
    (done,) = [e for e in b_events if isinstance(e, TurnFinished)]
    assert done.metrics.restored_n > 60 and done.text == expected


def test_a_slot_being_copied_from_restores_only_after_the_copy() -> None:
    """llama.cpp copies a slot's cells to another at the next decode: a restore into the source
    slot in the same step would hand the copier the restored cells under its prefix's
    positions. X (pinned to slot 0) copies the shared prefix from slot 1 in the step where Y's
    state for slot 1 arrives; X still answers what the shared text says."""
    shared = NOTE.replace("Meeting notes.", "The secret password is BANANA. I repeat: the secret password is BANANA.")
    greedy = Sampling(temperature=0.0, max_tokens=4, repeat_penalty=1.0)
    profile = make_profile(threads=1, context=1024)

    def run(sched: Scheduler, prompt: list[int], **kw: object) -> TurnFinished:
        events: list[object] = []
        sched.submit(prompt, greedy, events.append, constraints=Constraints(n_probs=1), **kw)
        while not any(isinstance(e, TurnFinished) for e in events):
            sched.step()
        return next(e for e in events if isinstance(e, TurnFinished))

    ask_x = shared + " Question: what is the secret password? Answer: the secret password is"
    recipe = ("Recipe. Preheat the oven to two hundred degrees. Mix flour, sugar, butter and three eggs in a "
              "large bowl until smooth, then add a pinch of salt and a spoon of baking powder. Pour the batter "
              "into a greased tin and bake for forty minutes, until a knife comes out clean. Let it cool before "
              "slicing. Question: how long does it bake? Answer:")
    with Scheduler(profile, n_parallel=2, threaded=False) as cold:
        expected = run(cold, cold.text_tokens(ask_x))
    with Scheduler(profile, n_parallel=2, threaded=False, kv_store=KvStateStore()) as first:
        run(first, first.text_tokens(recipe))  # saved at close
    store = KvStateStore()
    gate = threading.Event()
    real_load = store.load

    def held_load(key: StateKey, entry: SavedState) -> bytes:
        assert gate.wait(120)
        return real_load(key, entry)

    store.load = held_load  # type: ignore[method-assignment]
    with Scheduler(profile, n_parallel=2, threaded=False, kv_store=store) as sched:
        run(sched, sched.text_tokens(shared + " Question: where is the meeting? Answer:"), id_slot=1)
        b_events: list[object] = []
        count = sched.text_tokens("Count from one to one hundred: one, two, three,")
        sched.submit(count, Sampling(temperature=0.0, max_tokens=6, repeat_penalty=1.0), b_events.append,
                     ignore_eos=True, id_slot=0)
        while not any(isinstance(e, TokenDelta) for e in b_events):
            sched.step()
        x_events: list[object] = []
        y_events: list[object] = []
        sched.submit(sched.text_tokens(ask_x), greedy, x_events.append, id_slot=0, constraints=Constraints(n_probs=1))
        sched.submit(sched.text_tokens(recipe), greedy, y_events.append)  # slot 1: its state is read
        while not any(isinstance(e, TurnFinished) for e in b_events):
            sched.step()
        assert sched.slots[1].restoring is not None
        gate.set()
        sched.slots[1].restoring.data.result()  # Y's state is in memory when X takes slot 0
        while not (any(isinstance(e, TurnFinished) for e in x_events) and any(isinstance(e, TurnFinished) for e in y_events)):
            sched.step()
    x = next(e for e in x_events if isinstance(e, TurnFinished))
    y = next(e for e in y_events if isinstance(e, TurnFinished))
    assert y.metrics.restored_n > 60 and x.metrics.cache_n > 60  # both happened
    assert x.tokens[0] == expected.tokens[0]  # " BANANA", not what the recipe's cells would say
    assert abs(x.probs[0].logprob - expected.probs[0].logprob) < 0.3


def test_a_state_is_kept_for_the_same_number_of_slots(
    saved: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """llama.cpp refuses a sequence state made in a context with another number of KV streams
    (slots): such a state is not offered, read or warned about; one slot's states stay valid."""
    first, _ = saved
    (path,) = _state_files()
    with caplog.at_level(logging.WARNING), Scheduler(_profile(), n_parallel=2, kv_store=KvStateStore()) as two:
        done = finished_turn(two.stream(two.chat_tokens(_second(first)), GREEDY))
        assert done.metrics.restored_n == 0 and "Ignored a saved KV state" not in caplog.text
        one = StateKey.for_model(two.model.path, "f16", "f16", 1024)
        assert path.name.startswith(one.digest + "-") and two.state_key.digest != one.digest


def test_the_budget_evicts_the_least_recently_used(tmp_path: Path) -> None:
    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    store = KvStateStore(tmp_path, budget=3000)
    a = store.save(key, [1, 2, 3], b"a" * 1000)
    b = store.save(key, [7, 8, 9], b"b" * 1000)
    assert a.exists() and b.exists()
    c = store.save(key, [4, 5, 6], b"c" * 1000)  # over the budget: the oldest goes
    assert not a.exists() and b.exists() and c.exists()
    longer = store.save(key, [7, 8, 9, 10], b"d" * 900)  # a later turn supersedes its prefix
    assert not b.exists() and longer.exists()
    assert store.best(key, [7, 8, 9, 10, 11, 12], 2) is not None
    assert store.best(StateKey("other.gguf:1:1", "f16", "f16", 1024), [7, 8, 9, 10, 11], 2) is None


def test_the_budget_drops_states_never_restored_before_reused_ones(tmp_path: Path) -> None:
    """A server's one-off prompts (each person's own document, asked once) pushed out the
    state of the document everybody asks about: plain least-recently-used order. A state
    restored once (renamed *.reused.kv) now outlives newer ones never restored, and a
    conversation's state keeps the plain order (its person comes back to it)."""
    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    store = KvStateStore(tmp_path, budget=4000)  # three states
    shared = store.save(key, [1, 2, 3], b"s" * 1000)
    talk = store.save(key, [9, 9, 9], b"t" * 1000, tag="conversation:x:1:1.0")
    (entry,) = [e for e in store.entries(key) if e.path == shared]
    store.load(key, entry)
    store.restored(entry)  # (llama.cpp took it)
    (kept,) = [e.path for e in store.entries(key) if e.tokens == [1, 2, 3]]
    one_off = store.save(key, [4, 5, 6], b"x" * 1000)
    for n, path in enumerate((kept, talk, one_off)):  # (last used in this order)
        os.utime(path, (1000 + n, 1000 + n))
    newer = store.save(key, [7, 8, 9], b"y" * 1000)  # over the budget: the never-restored one-off goes
    assert not one_off.exists() and kept.exists() and talk.exists() and newer.exists()
    assert kept.name.endswith(".reused.kv")
    assert store.save(key, [1, 2, 3, 4], b"s" * 1000).name.endswith(".reused.kv")  # a longer turn of it too
    # what serve counts as asked before: the prompts' first tokens, 16 at a time
    assert store.seen_before(list(range(40))) == 0 and store.seen_before(list(range(40))) == 32
    assert store.seen_before([*range(20), 7, 7, 7]) == 16
    store.keep_seen()  # (serve stopping) the next start remembers them: a restart forgot them
    assert KvStateStore(tmp_path).seen_before([*range(20), 9]) == 16
    # and now and then as it runs (more asked, a minute passed): a kill -9 lost a day's of them
    running = KvStateStore(tmp_path)
    running.keep_seen_every_s = 0.0  # (the minute passed)
    assert running.seen_before(list(range(100, 140))) == 0  # never stopped: no keep_seen
    deadline = time.monotonic() + 60
    while KvStateStore(tmp_path).seen_before(list(range(100, 140))) != 32 and time.monotonic() < deadline:
        time.sleep(0.05)  # (written in a thread of its own)
    assert KvStateStore(tmp_path).seen_before([*range(100, 140)]) == 32
    assert KvStateStore(tmp_path).seen_before([*range(20), 9]) == 16  # with those kept before
    store.clear()
    assert KvStateStore(tmp_path).seen_before([*range(20), 9]) == 0


def test_a_state_restored_meanwhile_is_still_read_and_removed(tmp_path: Path) -> None:
    """A restore renames its file ``*.reused.kv``: a second restore of the state listed before
    (another slot, another process) read the whole prompt again, a superseded or deleted
    conversation's state renamed between the listing and the removal stayed on disk, and the
    eviction counted one renamed so as freed (the folder stayed over its budget)."""
    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    store, other = KvStateStore(tmp_path, budget=1 << 20), KvStateStore(tmp_path, budget=1 << 20)
    store.save(key, [1, 2, 3], b"a" * 100, tag="conversation:x:1:1.0")
    (mine,), (theirs,) = store.entries(key), other.entries(key)
    assert other.load(key, theirs) == b"a" * 100
    other.restored(theirs)
    assert store.load(key, mine) == b"a" * 100  # read under its new name
    store.restored(mine)
    assert [e.path.name.endswith(".reused.kv") for e in store.entries(key)] == [True]
    store.remove(mine.path)
    assert not list(tmp_path.glob("*.kv"))
    old, new = tmp_path / "old.kv", tmp_path / "new.kv"
    for n, path in enumerate((old, new)):
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1000 + n, 1000 + n))

    def restored_while_listed(path: Path) -> bool:  # (a reader renames it between the listing and the removal)
        if path == old:
            os.replace(old, tmp_path / "old.reused.kv")
        return True

    assert evict_least_recent(tmp_path, "*.kv", 1000, first=restored_while_listed) == [new]


def test_cells_saved_for_another_conversation_do_not_cover_this_ones(tmp_path: Path) -> None:
    """Cells a document's summary saved were taken as saved for the questions asked of it too,
    so deleting that conversation left its text's cells on disk (its own copy supersedes)."""
    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    store = KvStateStore(tmp_path, budget=1 << 20)
    store.save(key, [1, 2, 3, 4], b"a" * 100, tag="summary")
    assert store.covers(key, [1, 2, 3], tag="summary")
    assert not store.covers(key, [1, 2, 3], tag="questions")


def test_half_written_states_a_killed_process_left_are_removed(tmp_path: Path) -> None:
    """kill -9 during a save left ``.NAME.kv.XXXX.tmp`` (30 MiB each, conversation text in
    them) forever, outside the budget; `cache clear` left them too. Old ones go at the next save
    and at `cache clear`; one a running process writes now (young) stays."""
    import os

    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    store = KvStateStore(tmp_path, budget=1 << 20)
    left = tmp_path / ".abc-def.kv.x1y2z3.tmp"
    young = tmp_path / ".abc-ghi.kv.q8w9e0.tmp"
    for path in (left, young):
        path.write_bytes(b"x" * 100)
    hour_ago = time.time() - 3600
    os.utime(left, (hour_ago, hour_ago))
    store.save(key, [1, 2, 3], b"a" * 100)
    assert not left.exists() and young.exists()
    os.utime(young, (hour_ago, hour_ago))
    assert store.clear() == (1, [100]) and not young.exists()



@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB disk of its own (tmpfs, mounted as root; skipped otherwise), unmounted after."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a small disk needs root")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def test_the_cache_leaves_its_disk_room_for_everything_else(small_disk: Path) -> None:
    """The 2 GiB budget held whatever the free space: on a small disk five `chat -c` filled it
    to its last megabyte, every later save failed, and the conversations' file could not be
    written. The oldest states now go first, and a tenth of a small disk stays free."""
    disk = small_disk
    store = KvStateStore(disk / "kv", budget=2**31)
    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    kept = [store.save(key, [n, n + 1], bytes([n]) * 600_000) for n in range(1, 20, 2)]  # 6 MB in all
    assert kept[-1].exists() and not kept[0].exists()  # the newest kept, the oldest gone
    assert shutil.disk_usage(disk).free >= 4 * 2**20 // 10 - 4096
    with pytest.raises(NotSaved, match="no room for one of 4.8 MiB: the disk holding"):
        store.save(key, [99], b"x" * 5_000_000)  # larger than the whole disk may hold
    assert kept[-1].exists()  # and the states there are left alone


def test_a_state_that_fits_beside_the_cache_on_a_near_full_disk_evicts_nothing(small_disk: Path) -> None:
    """The room a save has is what the cache holds plus the disk's free space, less the tenth of
    a small disk kept free: counted without what the cache holds, a near-full disk threw away
    saved conversations to make room the disk already had, and refused a state that older ones
    evicted would have made room for."""
    disk = small_disk
    store = KvStateStore(disk / "kv", budget=2**31)
    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    kept = [store.save(key, [n, n + 1], bytes([n]) * 1_000_000, tag=f"conversation:x:{n}:1.0") for n in (1, 3)]
    assert all(p is not None and p.exists() for p in kept)  # 2 MB of a 4 MiB disk: both kept
    cached = sum(p.stat().st_size for p in kept if p is not None)
    usage = shutil.disk_usage(disk)
    spare = usage.free - usage.total // 10  # what the disk has beside the cache, its tenth kept free
    assert 0 < spare < cached  # a near-full disk: the cache holds more than it has left
    fits = spare - 64 * 1024  # (the header and the file system's blocks)
    new = store.save(key, [5, 6], b"n" * fits, tag="conversation:x:5:1.0")
    assert new is not None and new.exists()
    assert all(p is not None and p.exists() for p in kept), "a state evicted that the disk had room beside"
    # one larger than the free space, smaller than it and the cache: older states go for it
    big = store.save(key, [7, 8], b"b" * (spare + 500_000), tag="conversation:x:7:1.0")
    assert big is not None and big.exists() and not kept[0].exists()  # (the least recently used first)


def test_a_saved_state_is_used_only_past_the_tokens_asked_and_a_folder_at_its_budget_keeps_all(
        tmp_path: Path) -> None:
    """``best`` takes a state holding more than ``at_least`` tokens of the prompt (no restore for
    as many as the slot already holds), and a folder exactly at its budget loses nothing."""
    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    store = KvStateStore(tmp_path / "kv", budget=1 << 20)
    store.save(key, list(range(1, 11)), b"a" * 100)
    prompt = [*range(1, 11), 11, 12]
    assert store.best(key, prompt, 10) is None  # it holds exactly the 10 tokens the slot has
    found = store.best(key, prompt, 9)
    assert found is not None and found[1] == 10
    folder = tmp_path / "budget"
    folder.mkdir()
    for n in range(3):
        (folder / f"{n}.kv").write_bytes(b"x" * 1000)
        os.utime(folder / f"{n}.kv", (1000 + n, 1000 + n))
    assert evict_least_recent(folder, "*.kv", 3000) == []
    assert sorted(p.name for p in folder.glob("*.kv")) == ["0.kv", "1.kv", "2.kv"]
    assert evict_least_recent(folder, "*.kv", 2999) == [folder / "0.kv"]


def test_chat_c_continues_a_conversation_across_two_processes(smollm2_path: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.cli import main

    prof = write_profile_file(tmp_path / "p.yaml", _profile())

    def chat(text: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-m", "workstation.cli", "chat", "-p", str(prof), "-c", "committee",
             "--max-tokens", "12", "--temperature", "0", "--json", text],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    one = chat(FIRST[0]["content"])
    two = chat("And the meeting?")
    assert one["metrics"]["restored_n"] == 0
    assert two["metrics"]["restored_n"] > 60  # the first process's cells, from disk
    assert two["metrics"]["prompt_n"] < 30
    with Engine(_profile()) as cold:  # the same answer as recomputing the whole conversation
        assert two["text"] == cold.run_chat(_second(one["text"]), GREEDY).text
    assert main(["cache", "list", "--json"]) == 0  # (here: the two chats are the processes)
    states = json.loads(capsys.readouterr().out)["states"]
    profile = _profile()
    assert states and {(s["model"], s["kv_types"]) for s in states} == {
        (smollm2_path.name, f"{profile.kv_cache.k}/{profile.kv_cache.v}")}
    assert {s["conversation"] for s in states} == {"committee"}  # whose cells, by its title
    assert main(["cache", "list"]) == 0
    table = capsys.readouterr().out
    assert "MODEL" in table.splitlines()[0] and " smollm2-135m-instruct-q4_1 " in table.splitlines()[1]  # as 'models list' names it
    assert "CONVERSATION" in table.splitlines()[0] and "committee" in table.splitlines()[1]


def test_summarize_c_saves_a_document_conversation_that_chat_c_continues(
        smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``summarize FILE -c NAME`` leaves the document and its summary as a conversation whose
    KV cells are on disk: ``chat -c NAME`` in another process reads only the question."""
    from workstation.cli import main
    prof = write_profile_file(tmp_path / "p.yaml", _profile())
    doc = tmp_path / "minutes.txt"
    doc.write_text(NOTE * 2, encoding="utf-8")

    def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "workstation.cli", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300, env={**os.environ, **env})

    made = cli("summarize", "-p", str(prof), "--max-tokens", "16", "--quiet", str(doc), "-c", "minutes",
               LANG="tr_TR.UTF-8", LC_ALL="", LC_MESSAGES="")
    assert made.returncode == 0, made.stderr
    # what the app's chat shows for the document's prompt, in the app's language (it was English)
    store = ConversationStore()
    try:
        shown = store.messages(store.list("minutes")[0].id)[0].shown
    finally:
        store.close()
    assert shown == "minutes.txt belgesini özetle; sonra onunla ilgili sorularımı yanıtla.", shown
    asked = cli("chat", "-p", str(prof), "-c", "minutes", "--max-tokens", "8", "--temperature", "0",
                "--json", "Where is the annual meeting?")
    assert asked.returncode == 0, asked.stderr
    m = json.loads(asked.stdout)["metrics"]
    assert m["restored_n"] > 100 and m["prompt_n"] < 30  # the document came from disk
    # (the rest in this process: what is refused is refused before any model loads)
    assert main(["cache", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["states"]
    assert listed and {s["conversation"] for s in listed} == {"minutes"}  # the document's cells too

    def refused(*args: str) -> tuple[object, str]:
        try:
            rc: object = main(list(args))
        except SystemExit as ended:  # (as the command's process would end)
            rc = ended.code
        return rc, capsys.readouterr().err

    rc, err = refused("summarize", "-p", str(prof), str(doc), str(doc), "-c", "x")
    assert rc != 0 and "one file" in err and "Traceback" not in err
    # the name of a saved conversation again: refused before any work (it made a second
    # "minutes", and chat -c reached only the newest); so is a summary of no tokens
    rc, err = refused("summarize", "-p", str(prof), str(doc), "-c", "Minutes")
    assert rc == 1 and "Another conversation is named \u201cminutes\u201d" in err, err
    assert "loading" not in err.lower()
    rc, err = refused("summarize", "-p", str(prof), str(doc), "--max-tokens", "0")
    assert rc == 1 and "--max-tokens is 0; allowed values are 1 to 10,000,000." in err, err


def test_serve_keeps_long_prompts_on_disk_for_other_slots_and_restarts(smollm2_path: Path, tmp_path: Path) -> None:
    """serve's prompt cache: a long prompt pushed out of its slot by another is saved and
    restored for the next request that starts the same way, and its cells survive a restart."""
    import httpx
    from serve_helpers import serve, write_profile

    prof = write_profile(tmp_path, smollm2_path)
    data = tmp_path / "data"

    def ask(url: str, system: str, question: str) -> dict:
        body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
                "max_tokens": 4, "temperature": 0}
        r = httpx.post(f"{url}/chat/completions", json=body, timeout=120)
        assert r.status_code == 200, r.text
        return r.json()["timings"]

    minutes, other = NOTE * 4, "Answer in one word."  # any other prompt takes the one slot
    agenda = "Agenda. " + NOTE * 4
    with serve(prof, "--parallel", "1", data=data) as srv:
        first = ask(srv.base_url, minutes, "Hiring?")
        assert first["restored_n"] == 0
        assert ask(srv.base_url, other, "Hiring?")["restored_n"] == 0  # takes the slot
        # a long prompt asked once is not written (it cost 22 KB a token, and a server of
        # one-off documents spent its budget on them): the second request starting the same way is
        assert not list((data / "kv-cache").glob("*.kv"))
        assert ask(srv.base_url, minutes, "The budget?")["restored_n"] == 0
        ask(srv.base_url, other, "Hiring?")  # takes the slot: the part the two had in common is saved
        (state,) = KvStateStore(data / "kv-cache").entries()
        assert 250 < len(state.tokens) < first["prompt_n"]  # (neither question, nor a reply)
        back = ask(srv.base_url, minutes, "And the printers?")
        assert back["restored_n"] > 250 and back["prompt_n"] < 30
        ask(srv.base_url, agenda, "Hiring?")  # asked once before the restart...
    assert list((data / "kv-cache").glob("*.kv"))
    with serve(prof, "--parallel", "1", data=data) as srv:  # a restart
        again = ask(srv.base_url, minutes, "Where is the meeting?")
        assert again["restored_n"] > 250 and again["prompt_n"] < 30
        # ... and once after: asked before, so saved (the prompts asked are kept from one start to the next)
        ask(srv.base_url, agenda, "The budget?")
        ask(srv.base_url, other, "Hiring?")  # takes the slot
        wait_until(lambda: len(KvStateStore(data / "kv-cache").entries()) == 2, "the agenda's cells saved", 60)
        assert ask(srv.base_url, agenda, "And the printers?")["restored_n"] > 250

        # the TUI's chat through the server it started (Ctrl+G) names its conversation: the
        # cells are saved under its tag, and deleting the conversation deletes them there too
        from workstation.core.profile_lookup import load_profile_file
        from workstation.core.remote import RemoteEngine, client_profile

        tag = f"conversation:{tmp_path / 'c.sqlite3'}:7:1.5"
        store = KvStateStore(data / "kv-cache")
        chat = RemoteEngine(client_profile(load_profile_file(prof), srv.base_url), own_server=True)
        with chat:
            budget = [{"role": "system", "content": NOTE * 4 + " The budget."}, {"role": "user", "content": "Who?"}]
            assert finished_turn(chat.stream_chat(budget, tag=tag)).text
            ask(srv.base_url, other, "Hiring?")  # takes the slot: the conversation's cells are saved
            wait_until(lambda: tag in {e.tag for e in store.entries()}, "the conversation's cells saved", 60)
            assert chat.forget(tag) == 1 and tag not in {e.tag for e in store.entries()}
        foreign = RemoteEngine(client_profile(load_profile_file(prof), srv.base_url))
        assert foreign._payload(budget, Sampling(), tag=tag).get("conversation_tag") is None  # told to ours only
        assert foreign.forget(tag) == 0
        foreign.close()
        bad = httpx.post(f"{srv.base_url}/chat/completions", timeout=60,
                         json={"messages": budget, "max_tokens": 1, "conversation_tag": "a\nb"})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "conversation_tag"

    # --no-prompt-cache: nothing is written, where the minutes (asked before: the prompts asked are
    # kept) are saved when another prompt takes the slot (asked once in a data folder of its own, as
    # it was, nothing was written with the option ignored either)
    saved = sorted((data / "kv-cache").glob("*.kv"))
    assert saved
    with serve(prof, "--parallel", "1", "--no-prompt-cache", data=data) as srv:
        assert ask(srv.base_url, minutes, "Hiring?")["restored_n"] == 0
        ask(srv.base_url, other, "Hiring?")
    assert sorted((data / "kv-cache").glob("*.kv")) == saved


def test_cache_list_ends_a_cut_title_with_an_ellipsis(capsys: pytest.CaptureFixture[str]) -> None:
    """A title cut at 40 characters read as a whole name ("... teşekkür e-postası ya")."""
    from workstation.cli import main
    from workstation.core.kv_state import conversation_tag
    from workstation.core.store import ConversationStore

    store = ConversationStore()
    conv = store.new("Müşteriye kısa bir teşekkür e-postası yazalım mı?")
    KvStateStore().save(StateKey("SmolLM2-135M-Instruct.Q4_1.gguf:1:1", "f16", "f16", 1024), [1, 2, 3], b"a" * 100,
                        tag=conversation_tag(store.identity, conv.id, conv.created))
    store.close()
    assert main(["cache", "list"]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.endswith("  Müşteriye kısa bir teşekkür e-postası y…")
    assert "  smollm2-135m-instruct-q4_1  " in line  # its model as 'models list' names it (it said its file's name)


async def test_the_app_deletes_at_start_the_states_of_conversations_deleted_since(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A window with a conversation open saved its cells after another window deleted it, and
    they stayed on disk, the deleted text in them ("(deleted)" in `cache list`)."""
    from workstation.cli import main
    from workstation.core.kv_state import conversation_tag
    from workstation.core.store import ConversationStore
    from workstation.tui.app import WorkstationApp

    store = ConversationStore()
    kept, gone = store.new("Kept"), store.new("Gone")
    store.delete(gone.id)
    reused = store.new("Given the deleted one's number")  # SQLite may: told apart by its time
    states = KvStateStore()
    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    for n, conv in enumerate((kept, gone)):
        states.save(key, [n, 1, 2], b"a" * 100, tag=conversation_tag(store.identity, conv.id, conv.created))
    states.save(key, [9, 1, 2], b"a" * 100, tag="conversation:/elsewhere/conversations.sqlite3:1:1.0")  # not ours
    store.close()
    assert main(["cache", "list"]) == 0
    assert "(deleted)" in capsys.readouterr().out
    app = WorkstationApp(None, start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(300):
            if len(states.entries()) == 2:
                break
            await pilot.pause(0.05)
    assert sorted(e.tokens[0] for e in states.entries()) == [0, 9]
    assert reused.id == gone.id  # the gone one's state went though its number lives on


@pytest.mark.parametrize("value", ["abc", "-5", "1.5"])
def test_a_budget_that_is_not_a_size_is_said(value: str, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """WORKSTATION_KV_CACHE_MB=abc was ignored and -5 became a budget of nothing."""
    from workstation.cli import main
    from workstation.core.errors import WorkstationError

    monkeypatch.setenv("WORKSTATION_KV_CACHE_MB", value)
    with pytest.raises(WorkstationError, match=rf"^WORKSTATION_KV_CACHE_MB is '{re.escape(value)}'; it must be a whole number of MiB"):
        KvStateStore()
    assert main(["cache", "list"]) == 1
    assert "WORKSTATION_KV_CACHE_MB is " in capsys.readouterr().err
    monkeypatch.setenv("WORKSTATION_KV_CACHE_MB", "0")
    assert KvStateStore().budget == 0


def test_a_state_saved_with_flash_attention_off_is_kept_beside_the_one_with_it_on(
        saved: tuple[str, str], caplog: pytest.LogCaptureFixture) -> None:
    """Flash attention off keeps V transposed, and llama.cpp refuses a state saved the other way;
    it was not in the key, so a profile with it off replaced the state of one with it on (the
    same name) and each switch warned "llama.cpp could not load" and read the whole prompt."""
    first, expected = saved
    (on_state,) = _state_files()
    off = make_profile(threads=1, context=1024, flash_attn="off")
    with caplog.at_level(logging.WARNING):
        with Engine(off, keep_state=True) as eng:
            assert eng.run_chat(FIRST, GREEDY).metrics.restored_n == 0  # not offered: not the state it can load
        assert on_state.exists() and len(_state_files()) == 2  # both kept
        with Engine(_profile(), keep_state=True) as eng:
            final = eng.run_chat(_second(first), GREEDY)
        assert final.metrics.restored_n > 60 and final.text == expected
        with Engine(off, keep_state=True) as eng:
            assert eng.run_chat(_second(first), GREEDY).metrics.restored_n > 60
    assert "Ignored a saved KV state" not in caplog.text


def test_a_budget_of_nothing_or_too_small_for_a_state_keeps_none(
        smollm2_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """WORKSTATION_KV_CACHE_MB=0 (or one state larger than it) said at every save "the disk
    holding kv-cache is (nearly) full" with 76 GB free, and the states there stayed (104 MB of
    0 B): the budget was never applied. 0 now keeps nothing, quietly; a budget too small for a
    state says so once, in the command's language, naming the setting."""
    from workstation.cli import main

    prof = write_profile_file(tmp_path / "p.yaml", _profile())
    key = StateKey("m.gguf:1:1", "f16", "f16", 1024)
    before = KvStateStore().save(key, [1, 2, 3], b"a" * 3 * 2**20)  # kept before the budget was lowered
    assert before is not None and before.exists()
    monkeypatch.setenv("WORKSTATION_KV_CACHE_MB", "0")
    assert main(["chat", "-p", str(prof), "-c", "zero", "--max-tokens", "4", "--temperature", "0", FIRST[0]["content"]]) == 0
    assert "KV state" not in capsys.readouterr().err
    assert not list(KvStateStore().folder.glob("*.kv"))  # the one before evicted down to the budget
    monkeypatch.setenv("WORKSTATION_KV_CACHE_MB", "1")  # (a state of this prompt is 2 MiB and more)
    assert main(["chat", "--lang", "tr", "-p", str(prof), "-c", "small", "--max-tokens", "4", "--temperature", "0",
                 FIRST[0]["content"]]) == 0
    err = capsys.readouterr().err
    assert "Bir KV durumu kaydedilemedi:" in err and "WORKSTATION_KV_CACHE_MB ayarının" in err and "disk" not in err
    assert not list(KvStateStore().folder.glob("*.kv"))
    monkeypatch.setenv("WORKSTATION_KV_CACHE_MB", "abc")
    assert main(["cache", "list", "--lang", "tr"]) == 1
    assert "WORKSTATION_KV_CACHE_MB değeri 'abc'" in capsys.readouterr().err


def test_a_half_written_state_of_a_killed_process_goes_at_once(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """kill -9 while a state was written left its .tmp (conversation text), which `cache clear`
    kept for a minute and `cache list` never showed. A state is written through a part whose
    lock its writer holds: one left by a process that is gone is removed at once, one being
    written by a live process stays, and `cache list` counts both."""
    from workstation.cli import main

    store = KvStateStore()
    store.folder.mkdir(parents=True)
    writer = subprocess.Popen(  # a process writing a part (its lock held) that then is killed
        [sys.executable, "-c", "import sys, time\n"
         "from pathlib import Path\n"
         "from workstation.core.installed_models import held_part\n"
         "part = Path(sys.argv[1])\n"
         "with held_part(part, ('kv.being_written', {'file': part.name})):\n"
         "    part.write_bytes(b'x' * 4096); print('ready', flush=True); time.sleep(300)\n",
         str(store.folder / ".abc-def.kv.999.part")], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        assert main(["cache", "list"]) == 0
        out = capsys.readouterr().out
        assert "being written now: 1 state of 4 KB" in out and ", 4 KB of 2.0 GB" in out
        assert main(["cache", "clear"]) == 0
        assert (store.folder / ".abc-def.kv.999.part").exists()  # its writer is alive: it stays
    finally:
        writer.kill()
        writer.wait()
    assert main(["cache", "list"]) == 0
    assert "half-written: 1 file of 4 KB left by a program that stopped" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert not [p for p in store.folder.iterdir() if p.name.startswith(".abc-def")]  # at once, its lock file too
    # said so: it printed "Removed 0 saved KV states" after `cache list` sent the person there for them
    assert "Removed 1 half-written file of 4 KB left by a program that stopped mid-way." in capsys.readouterr().out
    old = store.folder / ".abc-ghi.kv.998.tmp"  # an older build's, left long ago
    old.write_bytes(b"x" * 3 * 2**20)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert main(["cache", "clear", "--lang", "tr"]) == 0
    assert "programın bıraktığı 3 MB boyutunda 1 yarım yazılmış dosya silindi." in capsys.readouterr().out
    assert not old.exists()
    assert main(["cache", "clear"]) == 0
    assert "half-written" not in capsys.readouterr().out  # none left: not said


def test_the_folder_is_its_owners_alone_from_the_first_file(tmp_path: Path) -> None:
    """serve's first write was the prompts asked (``keep_seen``): the folder was made 0755 with
    them, and became 0700 only at the first state saved."""
    store = KvStateStore()
    store.seen_before(list(range(40)))
    store.keep_seen()
    assert (store.folder / "seen-prompts.kv.hashes").exists()
    assert store.folder.stat().st_mode & 0o777 == 0o700


def test_cache_list_says_each_states_context_and_flash_attention_where_they_differ(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Two "f16/f16 kvtest" rows, one of a 4,096 context and one of 2,048, read as one state twice."""
    from workstation.cli import main

    store = KvStateStore()
    store.save(StateKey("m.gguf:1:1", "f16", "f16", 4096), [1, 2, 3], b"a" * 100)
    store.save(StateKey("m.gguf:1:1", "f16", "f16", 2048), [1, 2, 3], b"a" * 100)
    assert main(["cache", "list"]) == 0
    head, *rows = capsys.readouterr().out.splitlines()
    assert "CONTEXT" in head and "FLASH" not in head
    assert sorted(r.split()[-2] for r in rows[:2]) == ["2,048", "4,096"]
    store.save(StateKey("m.gguf:1:1", "f16", "f16", 2048, flash_attn=False), [1, 2, 3], b"a" * 100)
    assert main(["cache", "list", "--lang", "tr"]) == 0
    head, *rows = capsys.readouterr().out.splitlines()
    assert "BAĞLAM" in head and "FLASH ATTENTION" in head
    assert sorted(r.split()[-3:-1] for r in rows[:3]) == [["2.048", "açık"], ["2.048", "kapalı"], ["4.096", "açık"]]


@pytest.mark.parametrize("damage", ["folder", "cut"])
def test_the_prompts_asked_before_are_said_in_the_servers_language(smollm2_path: Path, tmp_path: Path,
                                                                   damage: str) -> None:
    """`serve --lang tr` said its saved states' warnings in Turkish, but those of the prompts
    asked before (a damaged or unreadable seen-prompts file, one it could not write back) in
    English: every warning of the saved states is said with phrases (``log_said``)."""
    from serve_helpers import serve, write_profile

    data = tmp_path / "data"
    folder = data / "kv-cache"
    folder.mkdir(parents=True)
    seen = folder / "seen-prompts.kv.hashes"
    if damage == "folder":
        seen.mkdir()  # read: "cannot be read"; written back at the stop: "could not keep"
    else:
        seen.write_bytes(b"x" * 17)  # not a whole number of hashes
    with serve(write_profile(tmp_path, smollm2_path), "--lang", "tr", data=data) as srv:
        import httpx

        answer = httpx.post(f"{srv.base_url}/chat/completions", timeout=120, json={
            "messages": [{"role": "user", "content": NOTE}], "max_tokens": 2})
        assert answer.status_code == 200
        wait_until(lambda: "istemler" in srv.log_text(), "the warning of the prompts asked before", 30)
        srv.proc.terminate()
        srv.proc.wait(timeout=30)
        time.sleep(0.5)  # (the last lines drained)
    said = srv.log_text()
    assert "asked before" not in said and "Could not" not in said
    if damage == "folder":
        assert "Daha önce sorulan istemler yok sayıldı: seen-prompts.kv.hashes okunamıyor" in said
        assert "Daha önce sorulan istemler saklanamadı:" in said
    else:
        assert "Daha önce sorulan istemler yok sayıldı: seen-prompts.kv.hashes bozuk." in said


def test_a_budget_of_nothing_copies_no_cells_out_and_makes_no_folder(smollm2_path: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """WORKSTATION_KV_CACHE_MB=0 kept nothing, but the store was still made: each slot's cells
    were copied out (tens of MiB) and its folder made before ``save`` returned None. Now there is
    no store: ``chat -c`` leaves no kv-cache folder, and an engine saves no state."""
    from workstation.cli import main

    monkeypatch.setenv("WORKSTATION_KV_CACHE_MB", "0")
    prof = write_profile_file(tmp_path / "p.yaml", _profile())
    assert main(["chat", "-p", str(prof), "-c", "zero", "--max-tokens", "4", "--temperature", "0", FIRST[0]["content"]]) == 0
    assert not KvStateStore().folder.exists()
    with Engine(_profile(), keep_state=True) as eng:
        eng.run_chat(FIRST, GREEDY)
        assert eng.core.kv_store is None and eng.save_state() == 0  # (the states save_states copied out)
    assert not KvStateStore().folder.exists()
