"""The office server's accounts over real HTTP with the official ``openai`` client and several
people's keys: quotas and their reset (the clock injected), revocation, profile limits, the
per-key slot cap, turns between people, usage totals equal to the responses' ``usage``, the
per-key metrics, and a tampered audit line found by ``workstation audit verify``.

The server runs in a thread of the test (``BackgroundServer``) over one real SmolLM2 scheduler,
with ``Accounts`` on the test's own data folder.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from conftest import make_profile, wait_until

from workstation.cli import main
from workstation.core.audit import CURRENT, AuditTrail, audit_dir
from workstation.core.keys import KeyRing
from workstation.core.quota import day_start, next_day_start
from workstation.core.scheduler import Scheduler
from workstation.core.server.accounts import Accounts
from workstation.core.server.options import ServerOptions
from workstation.core.server.process import BackgroundServer
from workstation.core.usage import UsageLog

QUESTION = [{"role": "user", "content": "Name three colours of the rainbow."}]
PROFILE = "test"  # make_profile's name: the profile the server serves
OPERATOR = "operator-key-for-the-tests"  # serve --api-key: the administrator's own key
pytestmark = pytest.mark.timeout(900)  # a shared 2-core machine can be very slow; nothing here is timed


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@dataclass
class Office:
    url: str
    accounts: Accounts
    clock: Clock
    scheduler: Scheduler
    keys: dict[str, str]
    server: BackgroundServer | None = None

    def client(self, name: str) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url, api_key=self.keys[name], max_retries=0, timeout=600)


@pytest.fixture(scope="module")
def scheduler(smollm2_path: Path) -> Iterator[Scheduler]:
    s = Scheduler(make_profile(), n_parallel=2, max_queue=16, slot_context=512)
    yield s
    s.close()


@contextmanager
def office(
    scheduler: Scheduler, people: dict[str, dict[str, object]], audit_content: bool = False,
    operator: str | None = OPERATOR, **options: Any
) -> Iterator[Office]:
    """A server over ``scheduler`` whose key file holds ``people`` (name -> KeyRing.add options);
    ``operator``: its own key (serve --api-key-file; None: people's keys only)."""
    ring = KeyRing()
    keys = {name: ring.add(name, **opts)[1] for name, opts in people.items()}  # type: ignore[arg-type]
    clock = Clock(day_start(time.time()) + 12 * 3600)  # noon today
    accounts = Accounts(
        PROFILE, shared_key=operator, keys=ring, usage=UsageLog(), audit=AuditTrail(),
        audit_content=audit_content, clock=clock,
    )
    server = BackgroundServer(scheduler, ServerOptions(model_id=PROFILE, **options), port=0, accounts=accounts).start()
    try:
        yield Office(server.url, accounts, clock, scheduler, keys, server)
    finally:
        server.stop()
        accounts.close()


def chat(client: openai.OpenAI, stream: bool = False, max_tokens: int = 8) -> int:
    """One chat request; returns the ``usage.total_tokens`` the client was told."""
    if not stream:
        reply = client.chat.completions.create(model=PROFILE, messages=QUESTION, max_tokens=max_tokens, temperature=0)
        assert reply.usage is not None
        return reply.usage.total_tokens
    total = 0
    for chunk in client.chat.completions.create(
        model=PROFILE, messages=QUESTION, max_tokens=max_tokens, temperature=0,
        stream=True, stream_options={"include_usage": True},
    ):
        if chunk.usage is not None:
            total = chunk.usage.total_tokens
    assert total > 0
    return total


# a state of the server, looked for every 10 ms for up to 2 minutes (6,000 looks of 10 ms
# before, at least a minute); never asserts on time
POLL = (120, 0.01)


def metric(text: str, line_start: str) -> float:
    for line in text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.rsplit(" ", 1)[1])
    raise KeyError(line_start)


# --- quotas, usage, metrics, audit -----------------------------------------------------------------
def test_a_request_cannot_take_a_key_past_its_day(scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quota was checked only before a request began: a long document went thousands of
    tokens past it. Now the prompt and the reply's room are held out of what is left: a reply
    stops where the day's tokens end, and a prompt larger than what is left is refused. The
    answer says so (``quota_reached``), so that a desk PC does not show it as a whole reply."""
    from workstation.core.events import finished_turn
    from workstation.core.remote import RemoteEngine

    prompt = len(scheduler.chat_tokens(QUESTION))
    people = {"carol": {"tokens_per_day": prompt + 3}, "dan": {"tokens_per_day": prompt - 1},
              "eve": {"tokens_per_day": 3 * (prompt + 3)}}
    with office(scheduler, people) as o:
        carol = o.client("carol")
        reply = carol.chat.completions.create(model=PROFILE, messages=QUESTION, max_tokens=50, temperature=0,
                                              extra_body={"ignore_eos": True})
        assert reply.usage is not None and reply.usage.prompt_tokens == prompt
        assert reply.usage.completion_tokens == 3 and reply.usage.total_tokens == prompt + 3
        assert reply.choices[0].finish_reason == "length" and (reply.model_extra or {})["quota_reached"] is True
        eve = o.client("eve")  # her own max_tokens stops it, well within her day: nothing said
        reply = eve.chat.completions.create(model=PROFILE, messages=QUESTION, max_tokens=3, temperature=0,
                                            extra_body={"ignore_eos": True})
        assert reply.choices[0].finish_reason == "length" and "quota_reached" not in (reply.model_extra or {})
        monkeypatch.setenv("WS_DESK_KEY", o.keys["eve"])  # then her desk PC's reply runs into the day's end
        desk = RemoteEngine(make_profile(backend="openai", model="", remote={"base_url": o.url, "api_key_env": "WS_DESK_KEY"},
                                         sampling={"max_tokens": 500, "temperature": 0.0}))
        try:
            final = finished_turn(desk.stream_chat([{"role": "user", "content": "Tell a long story about a cat."}]))
        finally:
            desk.close()
        assert final.metrics.stop_reason == "quota" and final.text, final.metrics
        assert o.accounts.quota.used("carol") == reply.usage.total_tokens  # and nothing is left held
        assert o.accounts.quota._held.get("carol", 0) == 0
        with pytest.raises(openai.RateLimitError) as caught:  # a prompt larger than the day: refused whole
            chat(o.client("dan"))
        assert (f"This request alone needs about {prompt} tokens, more than the whole day's {prompt - 1} of the "
                "key 'dan'") in str(caught.value)
        assert o.accounts.quota.used("dan") == 0 and o.accounts.quota._held.get("dan", 0) == 0



def test_chat_cut_where_the_day_ran_out_exits_75_and_says_when_as_its_refusal_does(
        scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`chat` on a desk PC whose key's day ran out mid-reply exited 1 ("it can answer again
    tomorrow"), and the next run was refused with 75 ("at 00:00"); README says 75 for over the
    key's quota. Both are 75, and both say when the day resets in the same words."""
    import yaml

    with office(scheduler, {"ayse": {"tokens_per_day": 120}}) as o:
        monkeypatch.setenv("WS_DESK_KEY", o.keys["ayse"])
        desk = tmp_path / "desk.yaml"
        desk.write_text(yaml.safe_dump({"name": "desk", "backend": "openai",
                                        "remote": {"base_url": o.url, "api_key_env": "WS_DESK_KEY"},
                                        "sampling": {"temperature": 0.0, "max_tokens": 500}}), encoding="utf-8")
        wait = next_day_start(o.clock()) - o.clock()  # the server's clock is noon today
        before = time.time()
        assert main(["chat", "-p", str(desk), "Tell a long story about a cat."]) == 75
        cut = capsys.readouterr()
        assert main(["chat", "-p", str(desk), "And then?"]) == 75
        refused = capsys.readouterr().err
        after = time.time()
    assert cut.out.strip()  # the reply so far
    resets = {time.strftime("%H:%M", time.localtime(t + wait)) for t in (before, after)}
    said = [line for line in cut.err.splitlines() if line.startswith("workstation: The reply stopped there")]
    assert len(said) == 1 and any(said[0].endswith(f"it can answer again at {r}, or ask whoever runs the server "
                                                   "to raise your daily limit.") for r in resets), cut.err
    assert any(f"it can answer again at {r}, or ask whoever runs" in refused for r in resets), refused


def test_usage_equals_the_responses_and_quota_resets_at_midnight(
    scheduler: Scheduler, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = len(scheduler.chat_tokens(QUESTION))
    people = {"alice": {"tokens_per_day": prompt + 9}, "bob": {}}  # one question's worth, and a token
    with office(scheduler, people) as o:
        alice, bob = o.client("alice"), o.client("bob")
        told = {"alice": chat(alice), "bob": chat(bob) + chat(bob, stream=True)}
        completions = o.client("bob").completions.create(model=PROFILE, prompt="Once upon a time", max_tokens=6)
        assert completions.usage is not None
        told["bob"] += completions.usage.total_tokens

        # alice used her day: 429 in OpenAI's shape, saying when it resets
        with pytest.raises(openai.RateLimitError) as caught:
            chat(alice, stream=True)
        err = caught.value
        body = err.response.json()
        assert set(body["error"]) == {"message", "type", "param", "code"}
        assert body["error"]["code"] == "insufficient_quota"
        left = prompt + 9 - told["alice"]
        assert (f"This request's prompt is {prompt} tokens, but the key 'alice' has {left} of its {prompt + 9} "
                "tokens left for today; the quota resets at ") in body["error"]["message"]
        assert err.response.headers["x-ratelimit-remaining-tokens"] == str(left)
        reset = next_day_start(o.clock.t)
        # (when, as the app writes a moment, not "2026-12-08T00:00+00:00"; the headers say it for machines)
        assert body["error"]["message"].endswith(f"resets at midnight ({time.strftime('%Y-%m-%d %H:%M', time.localtime(reset))}).")
        assert int(err.response.headers["retry-after"]) == int(reset - o.clock.t)
        told["bob"] += chat(bob)  # bob is not held back by alice's quota

        o.clock.t = reset + 60  # the next day: alice's quota is back
        next_day = chat(alice)
        told["alice"] += next_day

        o.accounts.flush()
        usage = UsageLog()
        rows = {r.group: r for r in usage.summary("person")}
        assert rows["alice"].tokens == told["alice"] and rows["alice"].requests == 3
        assert rows["alice"].errors == 1
        assert rows["bob"].tokens == told["bob"] and rows["bob"].requests == 4 and rows["bob"].errors == 0
        assert [r.tokens for r in usage.summary("day")] == [told["alice"] - next_day + told["bob"], next_day]
        records = usage.records()
        usage.close()
        assert main(["usage", "--json"]) == 0
        printed = {r["group"]: r["tokens"] for r in json.loads(capsys.readouterr().out)["rows"]}
        assert printed == told
        assert main(["keys", "list", "--json"]) == 0  # what each key used today, beside its limit
        today = {k["name"]: k["tokens_today"] for k in json.loads(capsys.readouterr().out)["keys"]}
        assert today["bob"] == told["bob"]  # (alice's next-day request is in the test clock's tomorrow)

        # the per-key counters and the latency histograms on /metrics: the operator sees what
        # each person used; a person's own key sees the totals only
        metrics_url = f"{o.url.removesuffix('/v1')}/metrics"
        as_bob = httpx.get(metrics_url, headers={"Authorization": f"Bearer {o.keys['bob']}"}).text
        assert "key_requests_total" not in as_bob and "key_prompt_tokens_total" not in as_bob
        assert metric(as_bob, "workstation:accounting_requests_total") == 7
        text = httpx.get(metrics_url, headers={"Authorization": f"Bearer {OPERATOR}"}).text
        assert metric(text, 'workstation:key_requests_total{key="alice",status="429"}') == 1
        assert metric(text, 'workstation:key_requests_total{key="alice",status="200"}') == 2
        assert metric(text, 'workstation:key_requests_total{key="bob",status="200"}') == 4
        prompt = metric(text, 'workstation:key_prompt_tokens_total{key="bob"}')
        completion = metric(text, 'workstation:key_completion_tokens_total{key="bob"}')
        assert prompt + completion == told["bob"]
        answered = [r for r in records if r.status == 200 and r.completion_tokens]
        assert len(answered) == 6
        assert metric(text, f'workstation:time_to_first_token_seconds_count{{profile="{PROFILE}"}}') == 6
        assert metric(text, f'workstation:time_per_output_token_seconds_count{{profile="{PROFILE}"}}') == sum(
            1 for r in answered if r.completion_tokens > 1
        )
        assert metric(text, f'workstation:request_duration_seconds_count{{profile="{PROFILE}"}}') == 7
        assert metric(text, f'workstation:request_duration_seconds_bucket{{profile="{PROFILE}",le="+Inf"}}') == 7
        assert metric(text, "workstation:accounting_requests_total") == 7

    # the audit trail: one line per request, counts only (no content unless turned on)
    path = audit_dir() / CURRENT
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert [x["who"] for x in lines].count("alice") == 3 and len(lines) == 7
    assert "rainbow" not in path.read_text(encoding="utf-8")
    assert sum(x["prompt_tokens"] + x["completion_tokens"] for x in lines if x["who"] == "bob") == told["bob"]
    assert main(["audit", "verify"]) == 0
    assert "intact: 7 lines" in capsys.readouterr().out
    raw = path.read_text(encoding="utf-8").splitlines()
    assert '"who":"bob"' in raw[1] and '"status":200' in raw[1]
    raw[1] = raw[1].replace('"status":200', '"status":500')
    path.write_text("\n".join(raw) + "\n", encoding="utf-8")
    assert main(["audit", "verify"]) == 1
    assert f"{CURRENT} line 2 was changed" in capsys.readouterr().out
    # cutting the last line is found too: the usage file knows the newest line
    path.write_text("\n".join(path.read_text(encoding="utf-8").splitlines()[:-1]) + "\n", encoding="utf-8")
    assert main(["audit", "verify"]) == 1
    assert "1 line removed after" in capsys.readouterr().out


def test_a_request_arriving_while_the_server_stops_is_refused_and_recorded(
    scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While `serve` ends the replies being written (Ctrl+C), a new request gets 503 saying why,
    and is recorded as every refusal is. /health says so (503, "stopping"): it said "ok", so a
    load balancer went on sending requests there."""
    from workstation.core.errors import BackendUnreachable
    from workstation.core.remote import RemoteEngine
    from workstation.tui.i18n import Texts

    with office(scheduler, {"hal": {}}) as o:
        assert o.server is not None
        o.server.openai.stopping = True  # as stop_serving leaves it, for as long as replies take to end
        health = httpx.get(f"{o.url.rsplit('/v1', 1)[0]}/health")
        assert (health.status_code, health.json()["status"]) == (503, "stopping")
        with pytest.raises(openai.InternalServerError) as caught:
            chat(o.client("hal"))
        assert caught.value.status_code == 503
        assert caught.value.body["message"] == "The server is shutting down; send the request again once it is back."  # type: ignore[index]
        # a desk PC says it by its code, in its own language, with the Retry-After (it was the English sentence)
        monkeypatch.setenv("WS_DESK_KEY", o.keys["hal"])
        with pytest.raises(BackendUnreachable) as stopping:
            RemoteEngine(make_profile(backend="openai", model="", remote={"base_url": o.url, "api_key_env": "WS_DESK_KEY"}))
        assert Texts("tr").error(stopping.value) == (f"{o.url} adresindeki ofis sunucusu kapanıyor ya da yeniden "
                                                     "başlıyor; 5 sn sonra yeniden deneyin.")
        o.server.openai.stopping = False
        o.accounts.flush()
    [row] = [r for r in UsageLog().summary("person") if r.group == "hal"]
    assert (row.requests, row.errors, row.tokens) == (1, 1, 0)


def test_a_reply_the_server_cut_off_by_stopping_is_not_counted_against_the_day(scheduler: Scheduler) -> None:
    """A reply the server's stop cut off (503, "send it again once the server is back") counted
    against the person's day ("chat 503 1014+184 tokens"): sent again, the same question cost
    twice. Its row keeps the tokens the server spent; the day (the quota, /usage/today, keys
    list) counts none of them."""
    with office(scheduler, {"ayse": {"tokens_per_day": 100_000}}) as o:
        assert o.server is not None
        openai_app = o.server.openai
        lines: list[str] = []
        body = {"model": PROFILE, "messages": QUESTION, "max_tokens": 200, "temperature": 0, "stream": True,
                "stream_options": {"include_usage": True}}
        with httpx.stream("POST", f"{o.url}/chat/completions", json=body, timeout=600,
                          headers={"Authorization": f"Bearer {o.keys['ayse']}"}) as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    lines.append(line)
                if len(lines) == 4 and not openai_app.cutting:  # a part of the reply: the stop cuts it off
                    openai_app.cutting = True
                    for req in list(openai_app._running.values()):
                        o.scheduler.cancel(req)
        assert json.loads(lines[-1][6:])["error"]["code"] == "shutting_down"
        openai_app.cutting = False
        o.accounts.flush()
        assert o.accounts.quota.used("ayse") == 0
        today = httpx.get(f"{o.url.rsplit('/v1', 1)[0]}/usage/today", headers={"Authorization": f"Bearer {o.keys['ayse']}"}).json()
        assert today["tokens"] == 0, today
    [row] = [r for r in UsageLog().summary("person") if r.group == "ayse"]
    # (what the server spent: kept, apart; not charged, in `usage` as in the day: one rule)
    assert (row.requests, row.errors, row.cut_requests) == (1, 1, 1) and row.cut_tokens > 0 and row.tokens == 0
    assert UsageLog().tokens_on_day(o.clock.t).get("ayse", 0) == 0  # (read again after a restart: not counted)


def test_a_key_is_told_only_its_own_cells_reused(scheduler: Scheduler) -> None:
    """The prefix cache is shared between people (for speed), but what a reply says it reused is
    the key's own: desk2 saw "reused 53 of 54" right after desk1 sent the same words. Another
    key's cells are told as read (usage, timings, the usage file); the key's own still reused."""
    words = [{"role": "user", "content": f"Write the memo for the meeting {time.time_ns()} about the budget."}]

    def ask(o: Office, who: str) -> tuple[int, int, int]:
        r = httpx.post(f"{o.url}/chat/completions", timeout=600, headers={"Authorization": f"Bearer {o.keys[who]}"},
                       json={"model": PROFILE, "messages": words, "max_tokens": 4, "temperature": 0})
        body = r.json()
        usage = body["usage"]
        return usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"], body["timings"]["cache_n"]

    with office(scheduler, {"desk1": {}, "desk2": {}}) as o:
        prompt, _, _ = ask(o, "desk1")
        again = ask(o, "desk1")
        assert again[0] == prompt and again[1] > prompt // 2 and again[2] > prompt // 2  # its own: reused
        other = ask(o, "desk2")
        assert other == (prompt, 0, 0), other  # desk1's cells: told as read
        assert ask(o, "desk2")[1] > prompt // 2  # now its own too
        o.accounts.flush()
    rows = [r for r in UsageLog().records() if r.key == "desk2"]
    assert rows[0].cached_tokens == 0 and rows[1].cached_tokens > 0


def test_a_key_that_read_words_in_one_slot_is_told_them_reused_in_another(scheduler: Scheduler) -> None:
    """Ann's words in one slot, bob's same words read (told 0) in another: bob's repeat went to ann's
    slot, where the cells were ann's only, and was told 0 reused again, though he had read those very
    words (deskfix13: F5 said "0 of 60" of his own conversation). Streamed, as a desk PC asks."""
    words = [{"role": "user", "content": f"Name three animals {time.time_ns()}."}]

    def ask(o: Office, who: str) -> int:
        body = {"model": PROFILE, "messages": words, "max_tokens": 4, "temperature": 0, "stream": True,
                "stream_options": {"include_usage": True}}
        cached = -1
        with httpx.stream("POST", f"{o.url}/chat/completions", json=body, timeout=600,
                          headers={"Authorization": f"Bearer {o.keys[who]}"}) as r:
            for line in r.iter_lines():
                if line.startswith("data: {") and (usage := json.loads(line[6:]).get("usage")):
                    cached = usage["prompt_tokens_details"]["cached_tokens"]
        return cached

    with office(scheduler, {"ann": {}, "bob two": {}}) as o:  # (a name no other test's requests had)
        ask(o, "ann")
        assert ask(o, "bob two") == 0  # (ann's: told as read)
        assert ask(o, "bob two") > 0 and ask(o, "bob two") > 0  # his own now, in whichever slot they are


def test_a_document_sharing_only_the_instructions_keeps_the_last_persons_document(scheduler: Scheduler) -> None:
    """bob sends a document, alice another with the same instructions, bob his again (all slots used
    before): alice's went into bob's slot for the instructions both shared, though a staler slot was
    free, and bob's was read again (serve --parallel 4: 44 cached, 5 s). Now hers copies the
    instructions into the least recently used slot, and bob's comes back from his cells."""
    tag = time.time_ns()
    instruction = "Please summarize the following document for me in three bullet points:\n\n"
    a = instruction + " ".join(f"The budget line {i} for the office in {tag} grew by {i * 7} euros." for i in range(8))
    b = instruction + " ".join(f"Our team {tag} visited customer number {i} in town {i * 3}." for i in range(8))

    def ask(o: Office, who: str, text: str) -> tuple[int, int]:
        r = httpx.post(f"{o.url}/chat/completions", timeout=600, headers={"Authorization": f"Bearer {o.keys[who]}"},
                       json={"model": PROFILE, "messages": [{"role": "user", "content": text}], "max_tokens": 1,
                             "temperature": 0})
        assert r.status_code == 200, r.text
        usage = r.json()["usage"]
        return usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]

    with office(scheduler, {"carol": {}, "bob": {}, "alice": {}}) as o:
        ask(o, "carol", f"List three colours {tag}.")  # (both slots used: carol's is the staler one now)
        ask(o, "bob", a)
        ask(o, "alice", b)
        prompt, cached = ask(o, "bob", a)
        assert cached >= prompt - 2, (prompt, cached)  # (the last token is always read)


def test_a_slot_file_read_back_is_no_keys_own_cells(scheduler: Scheduler, tmp_path: Path) -> None:
    """A slot file restored into the slot a key used last was told to that key as its own cells
    (the slot's owners were left as they were): desk1 learnt desk2 had sent those words (review30)."""
    from workstation.core.slot_files import SlotFiles

    secret = [{"role": "user", "content": f"My salary is {time.time_ns() % 10_000} euros; write the letter."}]
    other = [{"role": "user", "content": f"List three colours {time.time_ns()}."}]

    def ask(o: Office, who: str, words: list[dict[str, str]]) -> int:
        r = httpx.post(f"{o.url}/chat/completions", timeout=600, headers={"Authorization": f"Bearer {o.keys[who]}"},
                       json={"model": PROFILE, "messages": words, "max_tokens": 4, "temperature": 0})
        return r.json()["usage"]["prompt_tokens_details"]["cached_tokens"]

    # (names no other test's requests had: the instructions' cells desk1 read in another test are his own)
    with office(scheduler, {"desk1 file": {}, "desk2 file": {}}) as o:
        files = SlotFiles(o.scheduler, tmp_path)
        ask(o, "desk2 file", secret)
        # (desk2's slot: the one desk2 wrote last, not the longest, which another test's cells may be)
        [held] = [i for i, slot in enumerate(o.scheduler.slots) if slot.writer == "desk2 file"]
        files.save(held, "secret.bin")
        files.erase(held)  # (desk2's words now only in the file)
        ask(o, "desk1 file", other)
        [desk1s] = [i for i, slot in enumerate(o.scheduler.slots) if slot.writer == "desk1 file"]
        files.restore(desk1s, "secret.bin")
        assert ask(o, "desk1 file", secret) == 0  # read, not "reused": the file's cells are nobody's it knows


def test_the_stopping_note_says_the_grace_left_once_on_a_reply_that_goes_on(scheduler: Scheduler) -> None:
    """The server begins to stop while a reply is written: the note in its stream (an SSE comment)
    comes once, and says what is left of the grace (it said the whole grace, however much had gone)."""
    with office(scheduler, {"ayse": {}}) as o:
        assert o.server is not None
        openai_app = o.server.openai
        notes: list[str] = []
        data: list[str] = []
        body = {"model": PROFILE, "messages": QUESTION, "max_tokens": 60, "temperature": 0, "stream": True,
                "ignore_eos": True}
        try:
            with httpx.stream("POST", f"{o.url}/chat/completions", json=body, timeout=600,
                              headers={"Authorization": f"Bearer {o.keys['ayse']}"}) as r:
                for line in r.iter_lines():
                    if line.startswith(": "):
                        notes.append(line)
                    elif line.startswith("data: "):
                        data.append(line)
                    if len(data) == 3 and not openai_app.stopping:  # (begun to stop, 12 s of grace)
                        openai_app.cut_at, openai_app.stopping = time.monotonic() + 12, True
        finally:
            openai_app.stopping = False
    assert data[-1] == "data: [DONE]" and len(data) > 10, data
    [note] = notes
    left = note.rsplit("within ", 1)[1]
    assert note.startswith(": shutting_down: the server is stopping; this reply may be cut off within ") \
        and left.endswith(" s") and 1 <= int(left[:-2]) <= 12, note


def test_audit_content_only_when_turned_on(scheduler: Scheduler) -> None:
    with office(scheduler, {"erin": {}}, audit_content=True) as o:
        o.client("erin").chat.completions.create(model=PROFILE, messages=QUESTION, max_tokens=4, temperature=0)
        o.accounts.flush()
    line = json.loads((audit_dir() / CURRENT).read_text(encoding="utf-8").splitlines()[-1])
    assert line["who"] == "erin" and line["messages"] == QUESTION and isinstance(line["reply"], str)


# --- revocation and profile limits ---------------------------------------------------------------
def test_a_revoked_key_fails_on_its_next_request(
    scheduler: Scheduler, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from workstation.core.errors import EngineError
    from workstation.core.profiles import Sampling
    from workstation.core.remote import RemoteEngine
    from workstation.tui.i18n import Texts

    with office(scheduler, {"bob": {}, "carol": {}}) as o:
        bob = o.client("bob")
        assert chat(bob) > 0
        assert main(["keys", "revoke", "bob"]) == 0  # the command, on the same data folder
        with pytest.raises(openai.AuthenticationError) as caught:
            chat(bob)
        error = caught.value.response.json()["error"]
        # a code of its own (it was invalid_api_key, as a key never given, told apart by the English sentence)
        assert (error["message"], error["type"], error["code"]) == (
            "The API key 'bob' was revoked.", "invalid_request_error", "key_revoked")
        with pytest.raises(openai.AuthenticationError):
            bob.models.list()
        assert chat(o.client("carol")) > 0
        wrong = openai.OpenAI(base_url=o.url, api_key="ws-not-a-key", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            chat(wrong)
        o.accounts.flush()
        rows = {r.group: r for r in UsageLog().summary("person")}
        assert rows["(unknown)"].requests == 1 and rows["(unknown)"].errors == 1  # the key no one was given
        # bob's revoked key still being tried is his (it was "(unknown)"); nothing of it is charged; its
        # models.list too (a desk PC's first call: it left no row nor audit line, where a chat's did)
        assert (rows["bob"].requests, rows["bob"].errors) == (3, 2)
        assert o.accounts.quota.used("bob") == rows["bob"].tokens
        audit = [json.loads(line) for line in (audit_dir() / CURRENT).read_text(encoding="utf-8").splitlines()]
        assert [(a["who"], a["status"], a["route"]) for a in audit if a["who"] == "bob"] == [
            ("bob", 200, "chat"), ("bob", 401, "chat"), ("bob", 401, "models")]
        # a desk PC says both by their codes, all in its own language (the revoked one kept the English sentence)
        desk = make_profile(backend="openai", model="", remote={"base_url": o.url, "api_key_env": "WS_DESK_KEY"})
        for key, said in ((o.keys["bob"], "reddetti: anahtar iptal edilmiş; sunucuyu yöneten kişiden yeni bir anahtar "
                           "isteyin."), ("ws-not-a-key", "tanımıyor; tam kopyalandığını denetleyin")):
            monkeypatch.setenv("WS_DESK_KEY", key)
            with pytest.raises(EngineError) as desk_said:
                RemoteEngine(desk)
            assert Texts("tr").error(desk_said.value).startswith(
                f"{o.url} adresindeki sunucu API anahtarını (WS_DESK_KEY içindeki) {said}"), Texts("tr").error(desk_said.value)
        # carol's desk reads her key from a file; loaded, then her key revoked
        key_file = tmp_path / "api-key"
        key_file.write_text(o.keys["carol"] + "\n", encoding="utf-8")
        key_file.chmod(0o600)
        carols = RemoteEngine(make_profile(backend="openai", model="", remote={"base_url": o.url,
                                                                               "api_key_file": str(key_file)}))
        # every key revoked: the server stays closed, it does not open to everyone
        assert main(["keys", "revoke", "carol"]) == 0
        anyone = httpx.post(f"{o.url}/chat/completions", json={"messages": QUESTION, "max_tokens": 2})
        assert anyone.status_code == 401
        with pytest.raises(EngineError) as desk_said:
            carols.run_chat(QUESTION, Sampling(max_tokens=2))
        assert desk_said.value.said[0][0] == "remote.key_revoked"
        # as told, she asks for a new key and puts it in the file: the next message goes with it (the key
        # read as the profile loaded went on being sent, "revoked", until the app was started again)
        capsys.readouterr()
        assert main(["keys", "add", "carol"]) == 0
        key_file.write_text(capsys.readouterr().out.strip() + "\n", encoding="utf-8")
        assert carols.run_chat(QUESTION, Sampling(max_tokens=2)).metrics.predicted_n > 0
        carols.close()


def test_a_new_key_for_a_person_keeps_their_limits(scheduler: Scheduler, capsys: pytest.CaptureFixture[str]) -> None:
    """An admin revoked a person's key (lost, leaked) and made a new one with `keys add`: the new
    key had no limits at all, the day's budget set before gone without a word. Those not given
    again are kept, and the command says so; the server holds the new key to them."""
    prompt = len(scheduler.chat_tokens(QUESTION))
    with office(scheduler, {"dan": {"tokens_per_day": prompt - 1, "max_parallel": 1}}) as o:
        assert main(["keys", "revoke", "dan"]) == 0
        capsys.readouterr()
        assert main(["keys", "add", "dan"]) == 0  # the command, on the same data folder
        out, err = capsys.readouterr()
        assert f"'dan' keeps the limits of their revoked key that were not given here; it now has {prompt - 1:,} " \
            "tokens a day; replies at once: 1; any profile." in err and "keys set dan --tokens-per-day N (0: no limit)" in err, err
        new = openai.OpenAI(base_url=o.url, api_key=out.strip(), max_retries=0, timeout=600)
        with pytest.raises(openai.RateLimitError) as caught:  # the day's budget holds for the new key
            chat(new)
        assert f"more than the whole day's {prompt - 1} of the key 'dan'" in str(caught.value)
        # a limit given with the new key is the new key's; the others are still kept
        assert main(["keys", "revoke", "dan"]) == 0
        assert main(["keys", "add", "dan", "--tokens-per-day", "90000"]) == 0
        # (the 90,000 just given is not said as kept, and the command to change names the limit kept)
        err = capsys.readouterr().err
        assert "not given here; it now has 90,000 tokens a day; replies at once: 1; any profile." in err, err
        assert "keys set dan --max-parallel K (0: the server's default); to add a key without them, give keys add " \
            "--max-parallel 0." in err, err
        assert main(["keys", "add", "erin"]) == 0  # a person never given a key: nothing kept, nothing said
        assert "keeps the limits" not in capsys.readouterr().err
        # "no limit" at add time: 0, as `keys set … 0` says it (it was "--tokens-per-day is 0; it must be 1 or
        # more", and the revoked key's day's budget could only be cleared by a second command)
        assert main(["keys", "revoke", "dan"]) == 0
        assert main(["keys", "set", "erin", "--tokens-per-day", str(prompt - 1)]) == 0 and \
            main(["keys", "revoke", "erin"]) == 0
        capsys.readouterr()
        assert main(["keys", "add", "erin", "--tokens-per-day", "0"]) == 0
        out, err = capsys.readouterr()
        assert "'erin' now has no daily limit; replies at once: as many as the server allows; any profile, not the limits of their " \
            "revoked key." in err, err
        assert chat(openai.OpenAI(base_url=o.url, api_key=out.strip(), max_retries=0, timeout=600))  # no day's budget


def test_a_key_limited_to_other_profiles_cannot_reach_this_one(
    scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workstation.core.errors import EngineError
    from workstation.core.remote import RemoteEngine
    from workstation.tui.i18n import Texts

    people = {"dave": {"profiles": ["big-model"]}, "erin": {"profiles": ["big-model", PROFILE]}}
    with office(scheduler, people) as o:
        monkeypatch.setenv("WS_DESK_KEY", o.keys["dave"])  # a desk PC: not "refused the API key" (it is fine)
        with pytest.raises(EngineError) as desk:
            RemoteEngine(make_profile(backend="openai", model="", remote={"base_url": o.url, "api_key_env": "WS_DESK_KEY"}))
        assert str(desk.value) == (f"The server at {o.url} serves the profile '{PROFILE}', and your key may use only "
                                   f"big-model; ask whoever runs the server to let your key use '{PROFILE}'.")
        # in the desk PC's language, from the error's fields (the server's English sentence was inside)
        assert Texts("tr").error(desk.value) == (
            f"{o.url} adresindeki sunucu '{PROFILE}' profilini sunuyor, anahtarınız ise yalnızca şunları kullanabilir: "
            f"big-model; sunucuyu yöneten kişiden anahtarınızın '{PROFILE}' profilini kullanmasına izin vermesini isteyin.")
        with pytest.raises(openai.PermissionDeniedError) as caught:
            chat(o.client("dave"))
        error = caught.value.response.json()["error"]
        assert error["code"] == "profile_not_allowed" and "big-model" in error["message"]
        assert (error["profiles"], error["profile"]) == (["big-model"], PROFILE)  # (the openai client keeps them)
        assert caught.value.body["profiles"] == ["big-model"]  # type: ignore[index]
        with pytest.raises(openai.PermissionDeniedError):
            o.client("dave").models.list()
        # a path that is none is 404 to any key of this server's: what a key may use is each route's to say, as
        # OpenAI's restricted keys are refused per endpoint (it was 403 "may use the profiles", as if it were there)
        nowhere = httpx.get(o.url + "/nowhere", headers={"Authorization": f"Bearer {o.keys['dave']}"})
        assert nowhere.status_code == 404 and nowhere.json()["error"]["code"] == "not_found", nowhere.text
        assert chat(o.client("erin")) > 0


def test_a_persons_key_cannot_tag_or_forget_saved_cells(scheduler: Scheduler) -> None:
    """conversation_tag and /cells/forget are for the server's own clients (the TUI's chat,
    with the shared key): a person's key is refused both, the shared key is not."""
    import httpx

    with office(scheduler, {"frank": {}}) as o:
        root = o.url.removesuffix("/v1")
        tag = "conversation:/tmp/c.sqlite3:1:1.0"
        for key, status in ((o.keys["frank"], 403), (OPERATOR, 200)):
            headers = {"Authorization": f"Bearer {key}"}
            body = {"model": PROFILE, "messages": QUESTION, "max_tokens": 1, "conversation_tag": tag}
            tagged = httpx.post(f"{o.url}/chat/completions", json=body, headers=headers, timeout=600)
            forgot = httpx.post(f"{root}/cells/forget", json={"tag": tag}, headers=headers, timeout=600)
            assert (tagged.status_code, forgot.status_code) == (status, status), (tagged.text, forgot.text)
        assert forgot.json() == {"forgotten": 0}


# --- slots: a cap per key, and turns between people ----------------------------------------------
class Streamer(threading.Thread):
    """One streamed completion in a thread; ``first`` is set at its first token."""

    def __init__(self, client: openai.OpenAI, name: str, max_tokens: int, order: list[str]) -> None:
        super().__init__(daemon=True)
        self.client, self.name_, self.max_tokens, self.order = client, name, max_tokens, order
        self.first = threading.Event()
        self.tokens = 0
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            stream = self.client.completions.create(
                model=PROFILE, prompt=f"{self.name_} writes a long story about the office:", max_tokens=self.max_tokens,
                temperature=0, stream=True, stream_options={"include_usage": True}, extra_body={"ignore_eos": True},
            )
            for chunk in stream:
                if chunk.choices and chunk.choices[0].text and not self.first.is_set():
                    self.order.append(self.name_)
                    self.first.set()
                if chunk.usage is not None:
                    self.tokens = chunk.usage.completion_tokens
        except Exception as err:  # noqa: BLE001 - the test reports it
            self.error = err


def test_max_parallel_leaves_the_free_slot_to_another_person(scheduler: Scheduler) -> None:
    with office(scheduler, {"alice": {"max_parallel": 1}, "bob": {}}) as o:
        order: list[str] = []
        a1 = Streamer(o.client("alice"), "a1", 64, order)
        a1.start()
        assert a1.first.wait(600)
        a2 = Streamer(o.client("alice"), "a2", 8, order)
        a2.start()
        wait_until(lambda: scheduler.requests_deferred == 1, "alice's second request waiting", *POLL)
        assert scheduler.requests_processing == 1  # a slot is free, but alice is at her cap
        assert chat(o.client("bob"), max_tokens=4) > 0  # bob takes the free slot at once
        assert not a2.first.is_set()  # alice's second request has not started: a1 holds her slot
        a1.join(600)
        a2.join(600)
        assert a1.error is None and a2.error is None
        assert (a1.tokens, a2.tokens) == (64, 8)
        assert order == ["a1", "a2"]


def test_people_take_turns_for_one_slot(smollm2_path: Path) -> None:
    """One slot; alice holds it and queues two more; bob queues one after them: bob's request
    goes second, before alice's backlog."""
    with Scheduler(make_profile(), n_parallel=1, max_queue=8, slot_context=512) as one, office(
        one, {"alice": {}, "bob": {}}
    ) as o:
        order: list[str] = []
        a1 = Streamer(o.client("alice"), "a1", 64, order)
        a1.start()
        assert a1.first.wait(600)
        rest = []
        for name, who in (("a2", "alice"), ("a3", "alice"), ("b1", "bob")):
            s = Streamer(o.client(who), name, 4, order)
            s.start()
            rest.append(s)
            n = len(rest)
            wait_until(lambda n=n: one.requests_deferred == n, f"{n} requests waiting", *POLL)
        for s in (a1, *rest):
            s.join(600)
            assert s.error is None
        assert order == ["a1", "b1", "a2", "a3"]


def test_a_full_queue_gives_a_place_to_a_person_holding_none(smollm2_path: Path) -> None:
    """One slot, two places in the queue, both held by alice: bob's request still gets in, and
    alice's newest gives way (429 with Retry-After, as a full queue answers); with one place each nobody is pushed out.
    The one pushed out streams: its 429 comes before the stream starts (it was 200 and an error
    event, which the openai client raises without a status and does not retry)."""
    with Scheduler(make_profile(), n_parallel=1, max_queue=2, slot_context=512) as one, office(
        one, {"alice": {}, "bob": {}}
    ) as o:
        a1 = Streamer(o.client("alice"), "a1", 160, [])
        a1.start()
        assert a1.first.wait(600)
        results: dict[str, httpx.Response] = {}

        def send(name: str, who: str, stream: bool = False) -> threading.Thread:
            def run() -> None:
                results[name] = httpx.post(
                    f"{o.url}/completions", headers={"Authorization": f"Bearer {o.keys[who]}"},
                    json={"model": PROFILE, "prompt": f"{name} says", "max_tokens": 4, "temperature": 0,
                          "stream": stream},
                    timeout=600,
                )

            t = threading.Thread(target=run, daemon=True)
            t.start()
            return t

        threads = [send("a2", "alice")]
        wait_until(lambda: one.requests_deferred == 1, "a2 waiting", *POLL)
        threads.append(send("a3", "alice", stream=True))
        wait_until(lambda: one.requests_deferred == 2, "a3 waiting: the queue is full", *POLL)
        threads.append(send("b1", "bob"))
        threads[1].join(600)  # a3 gave its place to bob's request at once
        pushed = results["a3"]
        assert pushed.status_code == 429 and int(pushed.headers["Retry-After"]) >= 1
        assert "gave its place" in pushed.json()["error"]["message"]
        assert one.requests_deferred == 2  # a2 and b1
        threads.append(send("a4", "alice"))  # one place each now: refused, nobody pushed out
        threads[-1].join(600)
        assert results["a4"].status_code == 429 and "This server is full" in results["a4"].json()["error"]["message"]
        for t in threads:
            t.join(600)
        a1.join(600)
        assert results["a2"].status_code == 200 and results["b1"].status_code == 200


def test_a_desk_pc_says_why_the_server_refused_in_its_own_language(
    scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A desk PC showed the server's English 429 text inside its Turkish UI. The refusal's
    OpenAI-style error and rate-limit headers now make a sentence of the desk's language: the
    day used up (with when it ends, on the desk's clock), a message longer than what is left,
    the rest held by the person's own requests still running."""
    from workstation.core.errors import BackendUnreachable, EngineError, WorkstationError
    from workstation.core.events import finished_turn
    from workstation.core.phrases import say
    from workstation.core.remote import RemoteEngine, answered_phrase
    from workstation.tui.i18n import Texts

    prompt = len(scheduler.chat_tokens(QUESTION))
    people = {"erin": {"tokens_per_day": prompt + 10}, "fay": {"tokens_per_day": 10_000}, "gil": {"tokens_per_day": 900},
              "hal": {"tokens_per_day": prompt - 1}}
    with office(scheduler, people) as o:
        def refusal(name: str, error: type[WorkstationError] = BackendUnreachable) -> WorkstationError:
            monkeypatch.setenv("WS_DESK_KEY", o.keys[name])
            desk = RemoteEngine(make_profile(backend="openai", model="", remote={
                "base_url": o.url, "api_key_env": "WS_DESK_KEY"}))
            with pytest.raises(error) as caught:
                finished_turn(desk.stream_chat(QUESTION))
            desk.close()
            return caught.value

        wait = next_day_start(o.clock()) - o.clock()  # the server's clock is noon today
        o.accounts.quota.charge("gil", 900, o.clock())  # gil's day is used up
        before = time.time()
        told = refusal("gil")
        english = str(told)
        assert english.startswith(f"The server at {o.url} says your key has used its 900 tokens (pieces of words, "
                                  "as the server counts text) for today; "
                                  "it can answer again at ")
        assert english.endswith(", or ask whoever runs the server to raise your daily limit.")
        resets = english.split("it can answer again at ", 1)[1][:5]
        assert resets in {time.strftime("%H:%M", time.localtime(t + wait)) for t in (before, time.time())}
        assert f"anahtarınızın bugünkü 900 sözcük parçasını (token) kullandığını söylüyor; saat {resets}" in Texts("tr").error(told)

        o.accounts.quota.charge("erin", 20, o.clock())
        told = refusal("erin")  # her message is longer than what is left of her day: not "used up"
        assert (f"says this request needs more than the {prompt - 10:,} tokens (pieces of words, as the server counts "
                "text) your key has left today") in str(told)
        assert "in a chat, the conversation so far and its instructions" in str(told)  # (a 2-letter message was "too long")
        assert "bu isteğin anahtarınızın bugün kalan" in Texts("tr").error(told)
        told = refusal("hal", EngineError)  # his is longer than his whole day: not "wait", and not "try again later"
        assert f"this request alone needs about {prompt:,} tokens" in str(told) and "wait until" not in str(told)
        assert "bu yüzden beklemek işe yaramaz" in Texts("tr").error(told)

        assert o.accounts.quota.hold("fay", 10_000, 10_000 - prompt // 2, 0) == 0  # her other requests
        told = refusal("fay")
        assert "says your requests still running hold the rest of your tokens for today" in str(told)
        assert "hâlâ süren isteklerinizin" in Texts("tr").error(told)

        # a request longer than the server reads at once, by its code (the server's English sentence before);
        # a refusal whose code is not known here keeps the server's own sentence
        bearer = {"Authorization": f"Bearer {OPERATOR}"}  # (a key with its day left)
        long = httpx.post(f"{o.url}/chat/completions", headers=bearer, timeout=600,
                          json={"messages": [{"role": "user", "content": "word " * 2000}]})
        error = long.json()["error"]
        assert error["code"] == "context_length_exceeded", long.text
        # its figures as fields, as a 403 profile_not_allowed gives its profiles (only its English sentence had them)
        n, most, ctx = error["prompt_tokens"], error["max_prompt_tokens"], error["n_ctx"]
        assert n > most and most == o.scheduler.slot_ctx - 1 == ctx - 1 and f" {n} tokens" in error["message"], error
        n_, most_, ctx_ = (f"{v:,}".replace(",", ".") for v in (n, most, ctx))  # (Turkish thousands)
        assert say([answered_phrase(o.url, long)], Texts("tr").get) == (
            f"{o.url} adresindeki sunucu bu isteğin bir seferde okuyabileceğinden uzun olduğunu söylüyor ({n_} token; "
            f"bir istekte en fazla {most_} token okuyor, bağlamı {ctx_} token alıyor); yeni bir sohbet başlatın ya "
            "da daha kısa bir metin veya belge gönderin.")
        assert say([answered_phrase(o.url, httpx.Response(400, json={"error": {"code": "context_length_exceeded"}}))]) \
            == f"The server at {o.url} says this request is longer than it can read at once; start a new conversation, " \
            "or send a shorter text or document."  # (another server's: no figures)
        wrong = httpx.get(f"{o.url}/chat/completions", headers=bearer)
        assert say([answered_phrase(o.url, wrong)], Texts("tr").get) == (
            f"{o.url} adresindeki sunucu HTTP 405 ile yanıt verdi: GET is not allowed on /v1/chat/completions.")


async def test_a_person_sees_what_is_left_of_their_day_on_a_desk_pc(
    scheduler: Scheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F11 on a desk PC said "0 requests" and advised serving the API, right after using the
    office server. It now says what the person's key used today and what is left; the
    server's /usage/today says it to the key's owner only (the operator sees every key)."""
    import yaml
    from tui_helpers import until

    from workstation.core.profile_lookup import load_profile_file
    from workstation.tui.app import WorkstationApp
    from workstation.tui.screens.usage import UsageScreen

    with office(scheduler, {"alice": {"tokens_per_day": 5000}, "bob": {}}) as o:
        used = chat(o.client("alice"))
        root = o.url.removesuffix("/v1")
        mine = httpx.get(f"{root}/usage/today", headers={"Authorization": f"Bearer {o.keys['alice']}"}).json()
        assert (mine["key"], mine["tokens"], mine["tokens_per_day"], mine["left"]) == ("alice", used, 5000, 5000 - used)
        assert (mine["running"], mine["waiting"]) == (0, 0)
        everyone = httpx.get(f"{root}/usage/today", headers={"Authorization": f"Bearer {OPERATOR}"}).json()
        assert {k["key"]: k["tokens"] for k in everyone["keys"]} == {"alice": used, "bob": 0}
        assert all((k["running"], k["waiting"]) == (0, 0) for k in everyone["keys"])  # (each key's, as its own)
        assert httpx.get(f"{root}/usage/today", headers={"Authorization": "Bearer nope"}).status_code == 401

        monkeypatch.setenv("WS_DESK_KEY", o.keys["alice"])
        desk = tmp_path / "desk.yaml"
        desk.write_text(yaml.safe_dump({"name": "desk", "backend": "openai",
                                        "remote": {"base_url": o.url, "api_key_env": "WS_DESK_KEY"}}))
        app = WorkstationApp(load_profile_file(desk), sample_system=False, language="en",
                             store_path=tmp_path / "c.db")
        async with app.run_test(size=(110, 34)) as pilot:
            await until(pilot, lambda: app.engine is not None and app.loading is None)
            monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "desk-data"))  # the desk PC's own, apart
            await pilot.press("f11")
            await until(pilot, lambda: isinstance(app.screen, UsageScreen) and app.screen.overview is not None)
            line = str(app.screen.query_one("#usage-server").render())
            assert f"you used {used:,} of your 5,000 tokens today; {5000 - used:,} are left until 00:00" in line, line
            # this PC's own (empty) record: one line, not "0 requests" over empty charts and a table
            assert str(app.screen.query_one("#usage-total").render()).startswith("This PC serves no one itself")
            assert not app.screen.query_one("#usage-table").display
            assert "hold" not in line
            # a reply still being written: what it set aside is said, and given back when it ends
            assert o.accounts.quota.hold("alice", 5000, 100, 50) == 50
            await pilot.press("r")
            await until(pilot, lambda: "hold 150 of them" in str(app.screen.query_one("#usage-server").render()))
            mine = httpx.get(f"{root}/usage/today", headers={"Authorization": f"Bearer {o.keys['alice']}"}).json()
            assert (mine["held"], mine["left"]) == (150, 5000 - used)
            o.accounts.quota.release("alice", 150)
            assert httpx.get(f"{root}/usage/today", headers={"Authorization": f"Bearer {o.keys['alice']}"}).json()["held"] == 0
            # her key revoked meanwhile: said so, as the chat says it ("it is not a workstation server")
            o.accounts.keys.revoke("alice")  # type: ignore[union-attr]
            await pilot.press("r")
            await until(pilot, lambda: "refused the API key from WS_DESK_KEY" in str(
                app.screen.query_one("#usage-server").render()))
            assert "ask whoever runs the server for a new one" in str(app.screen.query_one("#usage-server").render())


def test_usage_the_file_could_not_take_is_written_once_it_can(scheduler: Scheduler) -> None:
    """Requests answered while the usage file took nothing (a full disk) were lost from it for
    good, and a restarted server counted the day's tokens without them; /health said "ok". The
    rows wait in memory and go in with the next write the file takes; /health names the problem.
    A trigger makes the file refuse rows as a full disk does."""
    import sqlite3

    with office(scheduler, {"alice": {}}) as o:
        assert o.accounts.usage is not None
        path = o.accounts.usage.path
        with sqlite3.connect(path) as db:
            db.execute("CREATE TRIGGER full BEFORE INSERT ON requests BEGIN "
                       "SELECT RAISE(FAIL, 'database or disk is full'); END")
        for _ in range(2):
            chat(o.client("alice"))
        o.accounts.flush()
        assert o.accounts.usage.records() == []
        health = httpx.get(f"{o.url.rsplit('/v1', 1)[0]}/health").json()
        assert health["status"] == "ok" and health["problems"] == ["cannot write the usage file"], health
        with sqlite3.connect(path) as db:
            db.execute("DROP TRIGGER full")
        chat(o.client("alice"))  # tried again every few seconds, and when the server closes
    assert [r.key for r in UsageLog(path).records()] == ["alice"] * 3


def test_a_summary_whose_day_runs_out_is_no_summary(scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key with a few hundred tokens a day: summarize wrote the part cut where the day ended
    as a whole summary ("…and Agreeing to…", exit 0) and batch marked the document done. It
    stops as a refusal over the quota does (batch: pending, exit 75), the cut part not kept as
    a finished one, and the sentence says why."""
    from workstation.core.documents import Document
    from workstation.core.errors import BackendUnreachable
    from workstation.core.remote import RemoteEngine
    from workstation.core.summarize import summarize_document
    from workstation.core.summary_options import SummarizeOptions

    memo = Document(source="memo.txt", kind="text", text="The office buys paper, pens and two new chairs this week. "
                    "Ayla orders them on Monday; the bill goes to the finance team by Friday.")
    options = SummarizeOptions(map_tokens=64, reduce_tokens=64)
    with office(scheduler, {"fay": {"tokens_per_day": 100_000}}) as o:
        def desk(name: str) -> tuple[RemoteEngine, Any]:
            monkeypatch.setenv("WS_DESK_KEY", o.keys[name])
            profile = make_profile(backend="openai", model="", sampling={"temperature": 0.0, "repeat_penalty": 1.0},
                                   remote={"base_url": o.url, "api_key_env": "WS_DESK_KEY"})
            return RemoteEngine(profile), profile

        engine, profile = desk("fay")
        with engine:
            whole = summarize_document(engine, memo, profile, options=options)
        asked = o.accounts.quota.used("fay") - sum(int(m.predicted_n) for m in
                                                   [c.metrics for c in whole.chunks if c.metrics] +
                                                   [r.metrics for r in whole.reduce_steps if r.metrics])
        assert asked > 0 and whole.chunks[0].metrics.predicted_n > 4  # type: ignore[union-attr]
        o.keys["erin"] = o.accounts.keys.add("erin", tokens_per_day=asked + 4)[1]  # room for the prompt and 4 tokens
        engine, profile = desk("erin")
        kept: list[object] = []
        with engine, pytest.raises(BackendUnreachable) as stopped:
            summarize_document(engine, memo, profile, options=options, on_part=kept.append)
    # when the day resets, as the refusal says it (it said "tomorrow", the refusal "at 00:00")
    assert str(stopped.value).startswith("The server stopped the summary: your key has used its tokens for today "
                                         "(its daily limit), so it can go on at ")
    assert str(stopped.value).endswith(", or ask whoever runs the server to raise your daily limit.")
    assert kept == []  # the part cut is no finished part


def test_a_desk_pcs_prompt_speed_is_the_servers_reading_not_its_queue(
        scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a person's other request (one slot at once for the key), the desk PC said "prompt 12
    at 5 tok/s": its time until the first token held the wait for the slot. The prompt's time is
    the server's own (``timings.prompt_ms``, as llama-server sends it); the wait stays in the TTFT."""
    import workstation.core.remote as remote_module
    from workstation.core.documents import Document
    from workstation.core.events import ServerWaiting, finished_turn
    from workstation.core.remote import RemoteEngine
    from workstation.core.summarize import SummaryProgress, summarize_document
    from workstation.core.summary_options import SummarizeOptions

    # the desk says the wait from the first silent second (5 s in use; no time is asserted)
    monkeypatch.setattr(remote_module, "QUIET_SAID_AFTER_S", 0.0)
    with office(scheduler, {"solo": {"max_parallel": 1, "tokens_per_day": 100_000}}) as o:
        monkeypatch.setenv("WS_DESK_KEY", o.keys["solo"])
        summary = RemoteEngine(make_profile(backend="openai", model="", sampling={"max_tokens": 400, "ignore_eos": True,
                                                                                  "temperature": 0.0},
                                            remote={"base_url": o.url, "api_key_env": "WS_DESK_KEY"}))
        first = threading.Thread(target=lambda: summary.run_chat(QUESTION))
        first.start()
        wait_until(lambda: o.accounts.quota._held.get("solo", 0) > 0, "the first request running", *POLL)
        desk_profile = make_profile(backend="openai", model="", sampling={"max_tokens": 4, "temperature": 0.0},
                                    remote={"base_url": o.url, "api_key_env": "WS_DESK_KEY"})
        desk = RemoteEngine(desk_profile)
        events = []
        progress: list[SummaryProgress] = []
        operators: list[dict[str, Any]] = []  # the operator's /usage/today meanwhile
        try:
            # the chat waited 18 s behind the person's own summary without a word: it says so
            for event in desk.stream_chat([{"role": "user", "content": "Say hi."}], reading=True):
                events.append(event)
                if isinstance(event, ServerWaiting):
                    if not operators:  # each key's running and waiting, as a person's own answer has them
                        operators.append(httpx.get(f"{o.url.removesuffix('/v1')}/usage/today",
                                                   headers={"Authorization": f"Bearer {OPERATOR}"}).json())
                    summary.cancel()  # (the wait ends when the first request does)
            final = finished_turn(iter(events))
            first.join()
            # a summary (F6, summarize, batch) behind the person's chat request showed nothing: it says the wait too
            first = threading.Thread(target=lambda: summary.run_chat(QUESTION))
            first.start()
            wait_until(lambda: o.accounts.quota._held.get("solo", 0) > 0, "the chat request running", *POLL)

            def progressed(p: SummaryProgress) -> None:
                progress.append(p)
                if p.waiting is not None:
                    summary.cancel()

            memo = Document(source="memo.txt", kind="text", text="Ayla orders paper on Monday.")
            summarize_document(desk, memo, desk_profile, options=SummarizeOptions(map_tokens=4, reduce_tokens=4),
                               on_progress=progressed)
            first.join()
            # the step that puts two parts together, behind her chat request: its wait said, and its end
            # (F6 said "the server is slow to answer: nothing from it for 6 s" to the end of the step)
            combining: list[SummaryProgress] = []

            def combined(p: SummaryProgress) -> None:
                nonlocal first
                combining.append(p)
                if p.stage == "reduce" and p.waiting is None and not first.is_alive() and len(combining) < 50:
                    if not any(c.waiting for c in combining):  # (once: her chat request, then the step)
                        first = threading.Thread(target=lambda: summary.run_chat(QUESTION))
                        first.start()
                        wait_until(lambda: o.accounts.quota._held.get("solo", 0) > 0, "the chat request running", *POLL)
                if p.waiting is not None:
                    summary.cancel()

            two = Document(source="two.txt", kind="text", text="Ayla orders paper on Monday. " * 6
                           + "\n\n" + "Deniz pays the bills on Friday. " * 6)
            summarize_document(desk, two, desk_profile, options=SummarizeOptions(
                map_tokens=4, reduce_tokens=4, chunk_tokens=48), on_progress=combined)
        finally:
            summary.cancel()
            desk.close()
            first.join()
            summary.close()
    waits = [e for e in events if isinstance(e, ServerWaiting)]
    assert waits and all(w.own for w in waits), events
    assert [(k["key"], k["running"], k["waiting"]) for k in operators[0]["keys"]] == [("solo", 1, 1)], operators
    said = [p.waiting for p in progress if p.waiting is not None]
    assert said and all(w.own for w in said) and progress[-1].stage == "done", progress
    stages = [(c.stage, c.waiting is not None) for c in combining]
    assert ("reduce", True) in stages and stages[-1] == ("done", False), stages
    assert stages[stages.index(("reduce", True)):][-2:] == [("reduce", False), ("done", False)], stages
    m = final.metrics
    # the server's reading, apart from the wait: the time to the first token holds the wait the desk
    # said (a second at least, before the slot was free) and the reading after it; no speed compared
    # (it was "under a third of the TTFT", which a busy PC's reading once was not)
    assert m.prompt_n > 0 and 0 < m.prompt_ms and m.prompt_ms + max(w.seconds for w in waits) * 1000 <= m.ttft_ms, m


class TripAfter:
    """A cancel flag that turns on after ``n`` asks: llama.cpp's abort callback asks it many
    times inside one prefill decode, so it trips in the middle of the prompt's batch."""

    def __init__(self, n: int) -> None:
        self.n, self.polls = n, 0

    def is_set(self) -> bool:
        self.polls += 1
        return self.polls > self.n


def test_a_client_gone_while_its_prompt_is_read_pays_for_the_batch_stopped(scheduler: Scheduler) -> None:
    """A stream closed 2 s into a 3,000-token prompt was logged "chat 499 0+0 tokens" and
    charged nothing: the batch stopped under it had kept no cells. A key could have the server
    read long prompts all day for free; llama-server, whose batch runs to its end, counts it."""
    import queue

    from workstation.core.events import TurnFinished
    from workstation.core.profiles import Sampling
    from workstation.core.server.accounts import Caller

    prompt = scheduler.chat_tokens([{"role": "user", "content": " ".join(f"item{i}" for i in range(110))}])
    assert 300 < len(prompt) < 500  # one batch: nothing of it is kept once stopped
    events: queue.SimpleQueue[object] = queue.SimpleQueue()
    scheduler.submit(prompt, Sampling(temperature=0.0, max_tokens=8), events.put, cancelled=TripAfter(60))
    while not isinstance(done := events.get(timeout=300), TurnFinished):
        pass
    m = done.metrics
    assert m.stop_reason == "cancelled" and m.predicted_n == 0
    assert m.prompt_n + m.cache_n + m.dropped_n == len(prompt) and m.dropped_n > 0  # stopped inside the batch
    with office(scheduler, {"carol": {"tokens_per_day": 100_000}}) as o:
        key = next(k for k in o.accounts.keys.list() if k.name == "carol")
        ticket = o.accounts.begin(Caller("carol", key=key), "chat")
        o.accounts.finish(ticket, 499, m)
        assert o.accounts.quota.used("carol") == len(prompt)


def test_the_slots_are_the_operators_not_a_persons_key(scheduler: Scheduler) -> None:
    """A person's key listed the slots (others' prompt lengths and settings) and saved, restored
    and erased their cells: a copy of a colleague's prompt under a file of its naming, restored
    at will to learn it from the cached tokens. The server's own key still can."""
    with office(scheduler, {"bob": {}}) as o:
        bob = {"Authorization": f"Bearer {o.keys['bob']}"}
        operator = {"Authorization": f"Bearer {OPERATOR}"}
        listed = httpx.get(f"{o.url.removesuffix('/v1')}/slots", headers=bob)
        assert listed.status_code == 403 and listed.json()["error"]["code"] == "operator_only"
        assert "(its --api-key)" in listed.json()["error"]["message"]
        for action in ("save", "restore", "erase"):
            r = httpx.post(f"{o.url.removesuffix('/v1')}/slots/0?action={action}", json={"filename": "bob-0"},
                           headers=bob)
            assert r.status_code == 403, (action, r.text)
        assert httpx.get(f"{o.url.removesuffix('/v1')}/slots", headers=operator).status_code == 200
        erase = httpx.post(f"{o.url.removesuffix('/v1')}/slots/0?action=erase", json={}, headers=operator)
        assert erase.status_code == 501  # (no --slot-save-path here: said, not refused)
    # people's keys and no operator's key: no key could read the slots or the per-key lines, and the 403
    # said "its --api-key" as if there were one; it says how the operator gets them
    with office(scheduler, {"carol": {}}, operator=None) as o:
        carol = {"Authorization": f"Bearer {o.keys['carol']}"}
        listed = httpx.get(f"{o.url.removesuffix('/v1')}/slots", headers=carol)
        assert listed.status_code == 403 and listed.json()["error"]["message"] == (
            "The slots and their files are for whoever runs the server, not a person's key (this server was "
            "started without an operator's key, so no key can read them: start serve with --api-key-file FILE (a "
            "key of the operator's own, in a file only the server's user reads) and send that key).")
        metrics = httpx.get(f"{o.url.removesuffix('/v1')}/metrics", headers=carol).text
        assert "# The per-key counters (workstation:key_*) are the operator's: this server was started without an " \
               "operator's key, so no key can read them: start serve with --api-key-file FILE" in metrics
        assert "workstation:key_requests_total" not in metrics


def test_a_key_whose_day_is_used_up_cannot_make_the_server_tokenize(scheduler: Scheduler) -> None:
    """/tokenize, /detokenize and /apply-template cost the server work and no tokens: a key over
    its day had it tokenize 4 MB texts, slowing everyone's replies. They are refused as a reply
    is; the log says whose request each was."""
    with office(scheduler, {"carol": {"tokens_per_day": 2300}}) as o:
        root, carol = o.url.removesuffix("/v1"), {"Authorization": f"Bearer {o.keys['carol']}"}
        assert httpx.post(f"{root}/tokenize", json={"content": "Hello"}, headers=carol).status_code == 200
        o.accounts.quota.charge("carol", 2300, o.clock())  # the day's tokens used (as replies charge them)
        for route, body in (("/tokenize", {"content": "Hello"}), ("/detokenize", {"tokens": [1, 2]}),
                            ("/apply-template", {"messages": QUESTION})):
            r = httpx.post(f"{root}{route}", json=body, headers=carol)
            assert r.status_code == 429 and r.json()["error"]["code"] == "insufficient_quota", (route, r.text)
            # its figures as 'keys list' writes them (it said "2300 of its 2300")
            assert "The key 'carol' has used 2,300 of its 2,300 tokens for today;" in r.json()["error"]["message"]


def test_a_persons_slow_bodies_leave_room_for_the_others(scheduler: Scheduler) -> None:
    """Eight bodies dribbled from one key held every other person's POST at 503 for a minute:
    one key holds a quarter of what is read at once, and is told so; another person's goes in."""
    import socket
    from urllib.parse import urlsplit

    with office(scheduler, {"bob": {}, "carol": {}}, max_body_bytes=100_000, max_inflight_body_bytes=400_000) as o:
        where = urlsplit(o.url)

        def held(key: str) -> socket.socket:  # the headers of a 100 kB body, and nothing more of it
            sock = socket.create_connection((where.hostname, where.port))
            sock.sendall(b"POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Authorization: Bearer " + o.keys[key].encode() + b"\r\nContent-Length: 100000\r\n\r\n")
            return sock

        bob = held("bob")  # his quarter
        try:
            wait_until(lambda: "workstation:body_bytes_in_flight 100000" in httpx.get(
                f"{o.url.removesuffix('/v1')}/metrics", headers={"Authorization": f"Bearer {OPERATOR}"}).text,
                "bob's body held", *POLL)
            more = httpx.post(f"{o.url.removesuffix('/v1')}/tokenize", json={"content": "x"},
                              headers={"Authorization": f"Bearer {o.keys['bob']}"})
            assert more.status_code == 503 and "The key 'bob' is sending as many request bodies" in more.text
            carol = httpx.post(f"{o.url.removesuffix('/v1')}/tokenize", json={"content": "x"},
                               headers={"Authorization": f"Bearer {o.keys['carol']}"})
            assert carol.status_code == 200, carol.text
        finally:
            bob.close()


def test_a_refused_request_is_no_use_of_the_persons_new_key(
    scheduler: Scheduler, capsys: pytest.CaptureFixture[str]
) -> None:
    """Mehmet's key revoked and a new one given: his old key's next request, refused (401
    key_revoked), was written as the last use of his new key ("last used 07:34"), which had
    never been used; and `keys list --all` showed his day's tokens on both rows, as if twice."""
    with office(scheduler, {"mehmet": {}}) as o:
        old = o.client("mehmet")
        used = chat(old)
        assert used > 0
        # (its use written before the key is renewed: the writer, run later, set it on the new key,
        # a name's key being the one not revoked; on a busy PC the clean clone saw it so)
        o.accounts.flush()
        assert main(["keys", "revoke", "mehmet"]) == 0
        assert main(["keys", "add", "mehmet"]) == 0
        with pytest.raises(openai.AuthenticationError):
            chat(old)  # refused: no use of the new key
        o.accounts.flush()
        ring = KeyRing(read_only=True)
        rows = ring.list(include_revoked=True)
        ring.close()
        new = [k for k in rows if k.revoked is None]
        assert len(new) == 1 and new[0].last_used is None, new
        capsys.readouterr()
        assert main(["keys", "list", "--all"]) == 0
        table = capsys.readouterr().out
        rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()
                if line.startswith("| mehmet")]
        assert len(rows) == 2, table
        revoked, live = sorted(rows, key=lambda row: row[-1] == "")
        assert live[2] == "never" and live[3] == f"{used:,}", table  # the day's tokens, on the key in use
        assert revoked[3] == "", table  # said once: not again on the revoked key
        # and the JSON agrees: the day's tokens on the key in use, none on the revoked one (it gave
        # them on both)
        assert main(["keys", "list", "--all", "--json"]) == 0
        listed = [k for k in json.loads(capsys.readouterr().out)["keys"] if k["name"] == "mehmet"]
        assert [k.get("tokens_today") for k in sorted(listed, key=lambda k: k["revoked"] is None)] == [None, used], listed
        assert main(["keys", "revoke", "mehmet"]) == 0  # every key of his revoked: said on the last one
        capsys.readouterr()
        assert main(["keys", "list", "--all", "--json"]) == 0
        listed = [k for k in json.loads(capsys.readouterr().out)["keys"] if k["name"] == "mehmet"]
        assert [k.get("tokens_today") for k in sorted(listed, key=lambda k: k["revoked"])] == [None, used], listed


def test_a_request_refused_before_any_token_is_no_use_of_the_key(scheduler: Scheduler) -> None:
    """A request the server refused, no token read or written (a bad request), is not the key's
    "last used": keys list would say a key in use that never got an answer."""
    with office(scheduler, {"mehmet": {}}) as o:
        with pytest.raises(openai.BadRequestError):
            o.client("mehmet").chat.completions.create(model=PROFILE, messages=QUESTION, max_tokens=8,
                                                       temperature=-3)
        o.accounts.flush()
        ring = KeyRing(read_only=True)
        rows = ring.list(include_revoked=True)
        ring.close()
        assert len(rows) == 1 and rows[0].last_used is None, rows


def test_a_use_written_after_the_persons_key_is_renewed_is_the_old_keys(scheduler: Scheduler) -> None:
    """The writer found a request's key by its person's name when it wrote the use, not by the
    key that made it: a request of Mehmet's old key whose use was written after his key was
    renewed (revoked, a new one given) was set on his new key, "last used" by a key never used.
    The writer is held here until the key is renewed, so the order is the same every run."""
    with office(scheduler, {"mehmet": {}}) as o:
        gate = threading.Event()
        add = o.accounts.usage.add  # type: ignore[union-attr]

        def held_add(records: Any) -> None:  # the real write, once the gate opens
            gate.wait()
            add(records)

        o.accounts.usage.add = held_add  # type: ignore[union-attr,method-assign]
        try:
            assert chat(o.client("mehmet")) > 0  # answered; its use waits for the writer
            assert main(["keys", "revoke", "mehmet"]) == 0
            assert main(["keys", "add", "mehmet"]) == 0
        finally:
            gate.set()
        o.accounts.flush()
        ring = KeyRing(read_only=True)
        rows = ring.list(include_revoked=True)
        ring.close()
        old = [k for k in rows if k.revoked is not None]
        new = [k for k in rows if k.revoked is None]
        assert len(old) == 1 and old[0].last_used is not None, rows  # the key that made the request
        assert len(new) == 1 and new[0].last_used is None, rows  # never used


def test_the_log_says_why_a_request_was_refused_or_cut(scheduler: Scheduler) -> None:
    """The log's line of a refusal said no why: `"Ayşe" … chat 429 0+0 tokens` (a day limit),
    `- 127.0.0.1 GET /v1/models 401` (a wrong key and a missing key alike), and a reply cut at the
    day limit read `chat 200 44+47`. Each line now ends with the reason the server decided on."""
    import logging

    said: list[str] = []

    class Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    logger = logging.getLogger("uvicorn.error")
    level, handler = logger.level, Lines()
    prompt = len(scheduler.chat_tokens(QUESTION))
    try:
        with office(scheduler, {"Ayşe Yılmaz": {"tokens_per_day": prompt + 3}, "bora": {"tokens_per_day": 10 * prompt},
                                "cem": {}}) as o:
            logger.addHandler(handler)  # (after uvicorn's set-up, which sets the logger's own)
            logger.setLevel(logging.INFO)
            models = f"{o.url}/models"
            assert httpx.get(models, headers={"Authorization": "Bearer ws-wrong"}).status_code == 401
            assert httpx.get(models).status_code == 401
            o.accounts.keys.revoke("cem")
            assert httpx.get(models, headers={"Authorization": f"Bearer {o.keys['cem']}"}).status_code == 401
            with pytest.raises(openai.AuthenticationError):
                chat(o.client("cem"))
            ayse = o.client("Ayşe Yılmaz")
            ayse.chat.completions.create(model=PROFILE, messages=QUESTION, max_tokens=50, temperature=0,
                                         extra_body={"ignore_eos": True})  # cut where her day ends
            with pytest.raises(openai.RateLimitError):
                chat(ayse)  # her day is used up
            # a request of bora's running holds most of his day (as one writing a long reply does)
            running = o.accounts.begin(o.accounts.authenticate({"authorization": f"Bearer {o.keys['bora']}"}), "chat")
            o.accounts.hold_quota(running, prompt, 10 * prompt - 2 * prompt)
            with pytest.raises(openai.RateLimitError, match="requests still running hold"):
                chat(o.client("bora"))
            o.accounts.finish(running, 200)
            o.accounts.flush()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    text = "\n".join(said)
    assert re.search(r"^- 127\.0\.0\.1 GET /v1/models 401 in \d+\.\d\d s \(wrong key\)$", text, re.M), text
    assert re.search(r"^- 127\.0\.0\.1 GET /v1/models 401 in \d+\.\d\d s \(no key\)$", text, re.M), text
    # (a revoked key's attempt is recorded under its owner, as a chat's is: the accounts' line)
    assert re.search(r"^cem 127\.0\.0\.1 models 401 0\+0 tokens in \d+\.\d\d s \(revoked key\)$", text, re.M), text
    assert re.search(r"^cem 127\.0\.0\.1 chat 401 0\+0 tokens in \d+\.\d\d s \(revoked key\)$", text, re.M), text
    assert re.search(rf'^"Ayşe Yılmaz" 127\.0\.0\.1 chat 200 {prompt}\+3 tokens in \d+\.\d\d s \(cut: day limit\)$',
                     text, re.M), text
    assert re.search(r'^"Ayşe Yılmaz" 127\.0\.0\.1 chat 429 0\+0 tokens in \d+\.\d\d s \(day limit\)$', text, re.M), text
    assert re.search(r"^bora 127\.0\.0\.1 chat 429 0\+0 tokens in \d+\.\d\d s \(held by running requests\)$",
                     text, re.M), text
    assert re.search(r"^bora - chat 200 0\+0 tokens in \d+\.\d\d s$", text, re.M), text  # (nothing to say: none)


def test_a_key_renamed_while_the_server_runs_keeps_its_day(scheduler: Scheduler) -> None:
    """`keys rename` on a running server: the key's next request is under the new name, with
    the day's tokens used so far (the server counts the day in memory, by name: the new name
    started at 0, a second day's worth), and every row of hers under it in `usage`; the
    operator's /usage/today says her day under the new name before her next request."""
    from workstation.cli import main

    with office(scheduler, {"ayse": {"tokens_per_day": 100_000}}) as o:
        first = chat(o.client("ayse"))
        o.accounts.flush()
        assert main(["keys", "rename", "ayse", "Ayşe Yılmaz"]) == 0
        # the operator's /usage/today before her next request: her day under the new name (it said 0)
        today = httpx.get(f"{o.url.rsplit('/v1', 1)[0]}/usage/today", headers={"Authorization": f"Bearer {OPERATOR}"})
        assert [(k["key"], k["tokens"]) for k in today.json()["keys"]] == [("Ayşe Yılmaz", first)]
        second = chat(o.client("ayse"))  # (the same key)
        assert o.accounts.quota.used("Ayşe Yılmaz") == first + second and o.accounts.quota.used("ayse") == 0
        o.accounts.flush()
    assert {r.group: r.tokens for r in UsageLog().summary("person")} == {"Ayşe Yılmaz": first + second}


def test_a_key_renamed_while_its_request_runs_has_that_request_under_the_new_name(scheduler: Scheduler) -> None:
    """`keys rename` while the key's reply was still being written: the server learns of a rename
    at the key's next request, so that reply was written under the old name (`usage --by person`
    showed a person who no longer exists, `keys list` her day without it, and a restarted server
    rebuilt her day without those tokens). Rows carry their key's id, and the usage file names
    each by the name that key has now."""
    with office(scheduler, {"ayse": {"tokens_per_day": 100_000}}) as o:
        stream = o.client("ayse").chat.completions.create(
            model=PROFILE, messages=QUESTION, max_tokens=8, temperature=0,
            stream=True, stream_options={"include_usage": True})
        chunks = iter(stream)
        next(chunks)  # (the reply has begun: the request is in flight)
        assert main(["keys", "rename", "ayse", "Ayse Y"]) == 0
        total = next(c.usage.total_tokens for c in chunks if c.usage is not None)
        o.accounts.flush()
        assert {r.group: r.tokens for r in UsageLog().summary("person")} == {"Ayse Y": total}
        clock = o.clock
    # a restarted server rebuilds her day from the usage file, those tokens in it
    again = Accounts(PROFILE, keys=KeyRing(), usage=UsageLog(), clock=clock)
    try:
        assert again.quota.used("Ayse Y") == total and again.quota.used("ayse") == 0
    finally:
        again.close()


def test_a_request_larger_than_the_whole_day_is_not_told_to_wait(
        scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A key of 200 tokens a day sent a 1,129-token prompt: "...has 200 of its 200 tokens left for
    today; the quota resets at midnight", with Retry-After: it is refused again after midnight.
    It says what helps (a shorter text, a larger limit), with no Retry-After and the openai
    library told not to retry it; the desk PC says so in its person's language (exit 1, not 75:
    trying again later cannot help)."""
    import yaml

    prompt = len(scheduler.chat_tokens(QUESTION))
    with office(scheduler, {"bob": {"tokens_per_day": prompt - 1}}) as o:
        with pytest.raises(openai.RateLimitError) as caught:
            chat(o.client("bob"))
        answer = caught.value.response
        assert answer.status_code == 429 and "retry-after" not in answer.headers
        assert answer.headers["x-should-retry"] == "false"
        error = answer.json()["error"]
        assert error["code"] == "request_over_day_limit" and error["prompt_tokens"] == prompt
        assert error["message"] == (f"This request alone needs about {prompt} tokens, more than the whole day's "
                                    f"{prompt - 1} of the key 'bob': ask the person who runs the server for a larger "
                                    "daily limit, or send a shorter text.")
        assert o.accounts.quota.used("bob") == 0 and o.accounts.quota.held("bob") == 0
        monkeypatch.setenv("WS_DESK_KEY", o.keys["bob"])
        desk = tmp_path / "desk.yaml"
        desk.write_text(yaml.safe_dump({"name": "desk", "backend": "openai",
                                        "remote": {"base_url": o.url, "api_key_env": "WS_DESK_KEY"},
                                        "sampling": {"temperature": 0.0, "max_tokens": 8}}), encoding="utf-8")
        assert main(["chat", "-p", str(desk), QUESTION[-1]["content"]]) == 1
        err = capsys.readouterr().err
        assert f"needs about {prompt} tokens" in err and f"more than your key's whole day of {prompt - 1}," in err, err
        assert "so waiting will not help: send a shorter text" in err and "wait until" not in err, err
        assert main(["chat", "--lang", "tr", "-p", str(desk), QUESTION[-1]["content"]]) == 1
        err = capsys.readouterr().err
        assert "bu yüzden beklemek işe yaramaz: daha kısa bir metin gönderin" in err and "saat" not in err, err


def test_over_the_day_a_new_conversation_is_advised_only_where_it_would_fit(
        scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A key with fewer tokens left than a message needs was told "a new conversation needs
    fewer" in a conversation already new, where only waiting helped (`chat "hello"` too, exit 75).
    Now that is advised only where the conversation has earlier turns and a new one (the last
    message alone) fits what is left; else the wait, or a larger daily limit."""
    import yaml

    from workstation.core.errors import BackendUnreachable
    from workstation.core.phrases import say
    from workstation.core.remote import RemoteEngine
    from workstation.tui.i18n import Texts

    story = " ".join(["The committee met on Monday and agreed on the budget for the new office."] * 6)
    history = [{"role": "user", "content": "What happened at the meeting?"},
               {"role": "assistant", "content": story}, {"role": "user", "content": "hello"}]
    with office(scheduler, {"mehmet": {}}) as o:
        monkeypatch.setenv("WS_DESK_KEY", o.keys["mehmet"])
        desk = RemoteEngine(make_profile(backend="openai", model="", remote={"base_url": o.url, "api_key_env": "WS_DESK_KEY"},
                                         sampling={"max_tokens": 8, "temperature": 0.0}))
        try:
            last, whole = desk.count_prompt(history[-1:]), desk.count_prompt(history)
            assert last + 10 < whole
            ring = o.accounts.keys
            assert ring is not None
            used = 1000  # (most of a day used: what is left is less than a message, the whole day more)
            o.accounts.quota.charge("mehmet", used, o.clock())

            def refusal(messages: list[dict[str, str]], left: int) -> str:
                ring.change("mehmet", tokens_per_day=used + left, max_parallel=None, profiles=())
                with pytest.raises(BackendUnreachable) as caught:
                    desk.run_chat(messages)  # type: ignore[arg-type]
                assert caught.value.said[0][0] == "remote.prompt_too_big"
                said = say(caught.value.said)
                assert f"needs more than the {left} tokens" in said, said
                return said + "\n" + say(caught.value.said, Texts("tr").get)

            # a new conversation ("hello" alone) that needs more than is left: only the wait helps
            said = refusal(history[-1:], last - 1)
            assert "new conversation" not in said and "yeni bir sohbet" not in said, said
            assert "wait until " in said and "ask whoever runs the server for a larger daily limit" in said, said
            assert "sunucuyu yöneten kişiden daha yüksek bir günlük sınır isteyin" in said, said
            # earlier turns, and "hello" alone fits what is left: a new conversation is advised
            said = refusal(history, last + 5)
            assert "a new conversation needs fewer and fits, or wait until " in said, said
            assert "yeni bir sohbet daha azını gerektirir ve sığar" in said, said
            # earlier turns, but not even "hello" alone fits: the wait again
            said = refusal(history, last - 1)
            assert "new conversation" not in said and "larger daily limit" in said, said
        finally:
            desk.close()
        # `chat "hello"` from the command line: exit 75, the wait said, no new conversation
        ring.change("mehmet", tokens_per_day=used + 2, max_parallel=None, profiles=())
        desk_file = tmp_path / "desk.yaml"
        desk_file.write_text(yaml.safe_dump({"name": "desk", "backend": "openai",
                                             "remote": {"base_url": o.url, "api_key_env": "WS_DESK_KEY"},
                                             "sampling": {"temperature": 0.0, "max_tokens": 8}}), encoding="utf-8")
        assert main(["chat", "-p", str(desk_file), "hello"]) == 75
        err = capsys.readouterr().err
        assert "wait until " in err and "new conversation" not in err, err


def test_audit_show_lists_who_used_it_when_and_marks_a_reply_cut_at_the_day_limit(
        scheduler: Scheduler, capsys: pytest.CaptureFixture[str]) -> None:
    """`audit` and `audit verify` said only "intact: 18 lines": to answer "who used it at 23:31"
    the raw JSON had to be read, where a reply cut at the key's day limit was `"status":200`
    with no mark (the server's log said "(cut: day limit)"). The line now says `"cut":
    "day_limit"`, the chain still verifies, and `audit show` lists the lines in plain columns,
    by `--key` and `--since`, in Turkish too."""
    prompt = len(scheduler.chat_tokens(QUESTION))
    with office(scheduler, {"mehmet": {"tokens_per_day": prompt + 3}, "ayse": {}}) as o:
        reply = o.client("mehmet").chat.completions.create(model=PROFILE, messages=QUESTION, max_tokens=50,
                                                           temperature=0, extra_body={"ignore_eos": True})
        assert (reply.model_extra or {})["quota_reached"] is True
        chat(o.client("ayse"))
        o.accounts.flush()
    lines = [json.loads(x) for x in (audit_dir() / CURRENT).read_text(encoding="utf-8").splitlines()]
    assert [(x["who"], x.get("cut")) for x in lines] == [("mehmet", "day_limit"), ("ayse", None)]
    assert main(["audit", "verify"]) == 0
    verified = capsys.readouterr().out
    assert "intact: 2 lines" in verified and "audit show" in verified, verified
    assert main(["audit", "show"]) == 0
    shown = capsys.readouterr().out.splitlines()
    header = [c.strip() for c in shown[0].split("|")[1:-1]]
    assert header == ["when", "who", "what", "status", "prompt", "generated", "cut off"], header
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in shown[2:]]
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(day_start(time.time()) + 12 * 3600))  # the test's clock
    assert rows[0] == [when, "mehmet", "chat", "answered (200)", str(prompt), "3",
                       "yes: the key's tokens for the day ran out"], rows
    assert rows[1][1] == "ayse" and rows[1][6] == "", rows
    assert main(["audit", "show", "--key", "AYSE"]) == 0  # one person's lines
    assert [line.split("|")[2].strip() for line in capsys.readouterr().out.splitlines()[2:]] == ["ayse"]
    assert main(["audit", "show", "--since", time.strftime("%Y-%m-%dT23:59")]) == 0  # (the lines are of noon)
    assert "No audit lines" in capsys.readouterr().out
    assert main(["audit", "show", "--lang", "tr", "--key", "mehmet"]) == 0
    turkish = capsys.readouterr().out
    assert "yanıtlandı (200)" in turkish and "evet: anahtarın bugünkü sözcük parçası (token) hakkı bitti" in turkish, turkish
    assert main(["audit", "show", "--json"]) == 0
    assert [x.get("cut") for x in json.loads(capsys.readouterr().out)["lines"]] == ["day_limit", None]
