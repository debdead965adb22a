"""``backend: openai`` profiles: RemoteEngine against ``workstation serve`` itself."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import wait_until
from serve_helpers import RunningServer, serve, write_profile

import workstation.core.remote as remote_module
from workstation.core.engine_api import IN_A_SUMMARY
from workstation.core.errors import BackendUnreachable, EngineError, ProfileError
from workstation.core.events import (
    SERVER_STOPPING,
    PromptRead,
    ServerWaiting,
    TokenDelta,
    TurnFinished,
)
from workstation.core.profile_check import profile_from_dict
from workstation.core.profile_lookup import load_profile
from workstation.core.profiles import Profile, Sampling
from workstation.core.remote import RemoteEngine
from workstation.core.server.protocol import stopping_note
from workstation.tui.i18n import Texts

KEY = "remote-test-key"
HELLO = [{"role": "user", "content": "Name three colours of the rainbow."}]


@pytest.fixture(scope="module")
def server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    profile = write_profile(tmp_path_factory.mktemp("remote"), smollm2_path)
    with serve(profile, "--parallel", "2", api_key=KEY) as srv:
        yield srv


def remote_profile(base_url: str, **remote: object) -> Profile:
    data = {
        "name": "remote-test",
        "backend": "openai",
        "remote": {"base_url": base_url, "api_key_env": "WS_REMOTE_TEST_KEY", "timeout_s": 120, **remote},
        "sampling": {"temperature": 0.0, "max_tokens": 16, "repeat_penalty": 1.0},
    }
    return profile_from_dict(data, "<remote test profile>")


@pytest.fixture
def remote(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[RemoteEngine]:
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", KEY)
    engine = RemoteEngine(remote_profile(server.base_url))
    yield engine
    engine.close()


def test_streams_a_turn_with_client_side_metrics(remote: RemoteEngine) -> None:
    events = list(remote.stream_chat(HELLO))
    deltas = [e for e in events if isinstance(e, TokenDelta)]
    final = events[-1]
    assert isinstance(final, TurnFinished) and deltas
    assert "".join(d.text for d in deltas) == final.text and final.text.strip()
    m = final.metrics
    assert 0 < m.predicted_n <= 16  # from the server's usage
    assert m.ttft_ms > 0 and m.total_ms >= m.ttft_ms
    assert m.stop_reason in ("eos", "length")
    if m.predicted_n > 1:
        assert m.predicted_per_second > 0
        assert m.predicted_per_second == pytest.approx(m.predicted_n / m.predicted_ms * 1000)
    info = remote.info()
    # discovered from /v1/models: the model by its name (asked for by the server's profile's)
    assert info.model_name == "smollm2-135m-instruct-q4_1" and remote.model == "serve-test"
    assert info.n_ctx == 1024 and info.profile == "remote-test"


def test_same_reply_as_the_server_and_cache_reported(remote: RemoteEngine) -> None:
    first = remote.run_chat(HELLO)
    second = remote.run_chat(HELLO)
    assert first.text == second.text  # greedy
    # the server's cached_tokens: the whole prompt again but its last token (read again for
    # its logits, as llama-server does); prompt_n is only what was read this time
    whole = first.metrics.prompt_n + first.metrics.cache_n
    assert whole == remote.count_prompt(HELLO)
    assert (second.metrics.cache_n, second.metrics.prompt_n) == (whole - 1, 1)


def test_a_server_out_of_reach_while_counting_is_said_and_its_own_count_is_used_once_back(remote: RemoteEngine) -> None:
    """Ctrl+R on a summary the server's restart cut off, pressed while it was still down, switched
    the desk PC to estimated counts for good: the document was cut into other parts (6, not 5),
    and once the server was back the finished parts were not used and every part was done again."""
    whole = remote.count_prompt(HELLO)
    with socket.socket() as probe:  # a port nobody listens on: the server stopped
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    up, remote.base_url, remote.exact_counts = remote.base_url, down, None
    with pytest.raises(BackendUnreachable):
        remote.count_prompt(HELLO)
    assert remote.exact_counts is None  # (not "this server cannot count")
    remote.base_url = up
    assert remote.count_prompt(HELLO) == whole and remote.exact_counts is True


def test_a_long_conversation_is_fitted_to_the_servers_context_as_the_local_engine_fits_it(remote: RemoteEngine) -> None:
    """The server refused a conversation longer than its context (400), so a desk PC's could go
    no further; the oldest messages are left out as the local engine leaves them out, and said."""
    filler = "The quarterly report lists desks, chairs and lamps for every office floor. " * 40  # ~600 tokens
    long = [{"role": r, "content": filler} for r in ("user", "assistant")] + HELLO
    assert remote.count_prompt(long) > remote.n_ctx  # (the server's own count)
    final = remote.run_chat(long)
    assert final.text.strip() and final.metrics.left_out_n == 2
    assert remote.run_chat(HELLO).metrics.left_out_n == 0
    # one message over the prompt tokens the server reads a request (serve --max-prompt-tokens, in its
    # /models meta), well inside its context: said so (it said "with 16 kept for the reply, this
    # profile's context (1,024 tokens) cannot hold it" of a 591-token message)
    limit, remote.meta["max_prompt_tokens"] = remote.meta.get("max_prompt_tokens"), 100
    try:
        with pytest.raises(EngineError) as over:
            remote.run_chat([{"role": "user", "content": filler}])
    finally:
        remote.meta["max_prompt_tokens"] = limit
    assert Texts("tr").error(over.value).startswith("Mesaj "), over.value
    assert "; sunucu bir istekte en fazla 100 token okuyor. Kısaltın ya da belgeyi özetleyin" in Texts("tr").error(over.value)
    # the server restarted with smaller limits since the profile loaded (its meta as it read them then):
    # its 400 said "start a new conversation", of a chat and of a summary's part alike. The error's
    # figures are taken: the conversation is fitted to them, a part too long said in the summary's words
    now = {k: remote.meta[k] for k in ("n_ctx", "max_prompt_tokens")}
    remote.meta.update(n_ctx=100_000, max_prompt_tokens=100_000)
    final = remote.run_chat(long)
    assert final.text.strip() and final.metrics.left_out_n == 2 and remote.meta | now == remote.meta
    assert remote.info().n_ctx == now["n_ctx"]
    remote.meta.update(n_ctx=100_000, max_prompt_tokens=100_000)
    with pytest.raises(EngineError) as part:
        remote.run_many([[{"role": "user", "content": filler * 2}]])
    assert part.value.said[0][0] in IN_A_SUMMARY, part.value.said
    # two parts of a summary sent together (run_many, parallel 2), both fitted to the old limits: the first's
    # 400 took the new figures into the meta, and the second's, compared with the meta of now, was said
    # "start a new conversation". Each is compared with the limits it was fitted to
    refused = remote.client.post("/chat/completions", json={"model": remote.model,
                                                             "messages": [{"role": "user", "content": filler * 2}]})
    old = {"n_ctx": 100_000, "max_prompt_tokens": 100_000}
    remote.meta.update(old)
    assert refused.status_code == 400 and remote._limits_changed(refused, old) and remote.meta | now == remote.meta
    assert remote._limits_changed(refused, old)  # the second part: fitted to the old ones, fitted again
    assert not remote._limits_changed(refused, now)  # fitted to the figures of now: too long for them


def test_a_long_prompt_says_how_far_the_server_has_read_it(remote: RemoteEngine, server: RunningServer) -> None:
    """A desk PC waited for a long prompt with nothing but the seconds: the server says after
    each part how far it has read (llama-server's ``return_progress``), before the first word.
    A server that does not say it takes it (``/models`` meta) is not asked: an older
    ``workstation serve`` refused the field, and every reply of a newer app failed."""
    long = [{"role": "user", "content": "Which one is missing from the office order? " + "stapler, paper, ink, " * 90}]
    sampling = Sampling(temperature=0.0, max_tokens=2)
    events = []
    for event in remote.stream_chat(long, sampling, reading=True):
        events.append(event)
        if len(events) == 1:  # a desk PC busy drawing: the reply's two words wait in the socket, read at once
            wait_until(lambda: not any(s["is_processing"] for s in httpx.get(
                f"{server.root}/slots", headers=server.headers(), timeout=30).json()), "the reply written", 120)
    reads = [e for e in events if isinstance(e, PromptRead)]
    assert reads, events
    first_word = next(i for i, e in enumerate(events) if isinstance(e, TokenDelta | TurnFinished))
    assert all(events.index(r) < first_word for r in reads)
    assert all(r.total == remote.count_prompt(long) > r.read >= 512 + r.cached and 0 < r.fraction < 1 for r in reads)
    assert isinstance(events[-1], TurnFinished) and events[-1].metrics.prompt_n + events[-1].metrics.cache_n == reads[0].total
    # (they said "7,650.9 tok/s", timed here: the server's own decode time is used, and a 135M
    # model writes about 80 tok/s on this CPU; a slower machine only lowers it)
    assert events[-1].metrics.predicted_n == 2 and 0 < events[-1].metrics.predicted_per_second < 1000, events[-1].metrics
    # a prompt of one part (512 tokens or fewer) said nothing until its first word, and F5's memory
    # gauge (of a chat on the app's own server, Ctrl+G) left the new message out until the reply ended
    short = [e for e in remote.stream_chat(HELLO, sampling, reading=True) if isinstance(e, PromptRead)]
    assert len(short) == 1 and short[0].read == short[0].total == remote.count_prompt(HELLO), short
    again = [*long[:-1], {"role": "user", "content": long[0]["content"] + " And pens?"}]
    assert remote.meta.pop("prompt_progress") is True  # a server that does not say it takes it is not asked
    assert not any(isinstance(e, PromptRead) for e in remote.stream_chat(again, sampling, reading=True))


def test_cancel_stops_the_stream(remote: RemoteEngine) -> None:
    seen = 0
    final = None
    for event in remote.stream_chat(HELLO, Sampling(temperature=0.0, max_tokens=200)):
        if isinstance(event, TokenDelta):
            seen += 1
            if seen == 2:
                remote.cancel()
        else:
            final = event
    assert final is not None and final.metrics.stop_reason == "cancelled"
    assert final.metrics.predicted_n < 200
    remote.reset()  # nothing to do, but part of the interface
    assert remote.run_chat(HELLO).text  # usable again


def test_a_desk_pc_waits_for_a_free_slot_as_the_server_asks(
        smollm2_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every slot and the queue taken the server answers 429 with Retry-After; the desk
    PC gave up at once ("busy with other people's requests; try again in 1 s", exit 1) where
    Ollama's queue holds a request. It asks again after the time named, until a slot is free,
    and says why it waits (it said "the server is slow to answer" of a server that had answered
    at once that every slot was taken)."""
    import threading

    from workstation.commands import waiting_line
    from workstation.core.events import finished_turn
    from workstation.core.keys import DB_NAME, KeyRing
    from workstation.tui.widgets.message_view import waiting_key

    data = tmp_path / "data"
    data.mkdir()
    ring = KeyRing(data / DB_NAME)
    _, alice = ring.add("alice")  # a person's key: the server counts her requests
    ring.close()
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", alice)
    monkeypatch.setattr(remote_module, "QUIET_SAID_AFTER_S", 0.0)  # (5 s in use; no time is asserted)
    with serve(write_profile(tmp_path, smollm2_path), "--parallel", "1", "--queue", "0", api_key=KEY,
               data=data) as srv:
        first, second = RemoteEngine(remote_profile(srv.base_url)), RemoteEngine(remote_profile(srv.base_url))
        hurried = RemoteEngine(remote_profile(srv.base_url))  # (its timeout_s gone at the first answer: below)
        hurried.profile = dataclasses.replace(hurried.profile, remote=dataclasses.replace(hurried.profile.remote,
                                                                                          timeout_s=0.0))
        writing = threading.Event()
        done: list[TurnFinished] = []

        def long_reply() -> None:
            for event in first.stream_chat(HELLO, Sampling(temperature=0.0, max_tokens=160, ignore_eos=True)):
                writing.set()
                if isinstance(event, TurnFinished):
                    done.append(event)

        other = threading.Thread(target=long_reply)
        other.start()
        try:
            assert writing.wait(60)
            # waited past its timeout_s behind her own reply: its last word says so, as the waiting line
            # (it said "busy with other people's requests")
            with pytest.raises(BackendUnreachable) as gave_up:
                list(hurried.stream_chat(HELLO, Sampling(temperature=0.0, max_tokens=4)))
            events = list(second.stream_chat(HELLO, Sampling(temperature=0.0, max_tokens=4), reading=True))
            reply = finished_turn(iter(events))
        finally:
            other.join(120)
            first.close()
            second.close()
            hurried.close()
        assert str(gave_up.value) == (f"The server at {hurried.base_url} is busy with your other request; send this "
                                      "one again once it has ended."), gave_up.value
        assert reply.text and reply.metrics.stop_reason != "failed"
        assert done and done[0].metrics.predicted_n == 160
        assert srv.metric("workstation:requests_rejected_total") >= 1  # it was refused, and waited
        [busy, *_] = [e for e in events if isinstance(e, ServerWaiting) and e.held] or [None]
        # her own first reply holds the only slot (no queue): said so, not "other people's requests"
        assert busy is not None and busy.held == "server_busy" and busy.own, events
        assert waiting_line(busy) == ("waiting: the server is busy with your other request; this one starts when "
                                      "it ends (Ctrl-C stops)…")
        # (someone else's request in the slot: other people's)
        assert Texts("tr")(waiting_key("chat", False, busy.held), s="7") == (
            "bekleniyor: sunucu başka kişilerin istekleriyle meşgul; biri bitince sizinki başlar… 7 sn (Esc durdurur)")
        assert waiting_line(ServerWaiting(7, held=busy.held)) == (
            "waiting: the server is busy with other people's requests; this one goes when one ends (Ctrl-C stops)…")


def test_a_desk_pc_waits_while_the_server_loads_its_model(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """An office server restarted by its admin answers 503 "loading" with Retry-After until its
    model is loaded; the desk PC's turn then failed at once (a request used to wait unanswered
    till then). It asks again after the time named, as for a busy server. The server proper
    comes up on the same port: here the module's, behind a relay."""
    import socket
    import threading

    from workstation.core.errors import BackendUnreachable
    from workstation.core.remote import check_server
    from workstation.core.server import process

    monkeypatch.setenv("WS_REMOTE_TEST_KEY", KEY)
    monkeypatch.setattr(process, "LOADING_RETRY_S", 1)
    sock = process.bind_socket("127.0.0.1", 0)
    engine = RemoteEngine(remote_profile(f"http://127.0.0.1:{sock.getsockname()[1]}/v1", model="serve-test"),
                          check=False)
    upstream = ("127.0.0.1", int(server.root.rsplit(":", 1)[1]))

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)

    def relay() -> None:  # the server proper, once loaded
        with contextlib.suppress(OSError):
            while True:
                conn, _ = sock.accept()
                far = socket.create_connection(upstream)
                for a, b in ((conn, far), (far, conn)):
                    threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    replies: list[TurnFinished] = []
    turn = threading.Thread(target=lambda: replies.append(engine.run_chat(HELLO, Sampling(temperature=0.0, max_tokens=4))))
    try:
        with process.answering_while_loading([sock]) as answered:
            # `profiles check` said "answers now"; with no remote.model, a chat said "busy or down (HTTP 503)";
            # then something generic of a server "loading its model": it is starting, try again after its Retry-After
            said = f"The office server at {engine.base_url} is starting (it is loading its model); try again in 1 s."
            assert str(check_server(engine.profile).error) == said
            with pytest.raises(BackendUnreachable) as loading:
                RemoteEngine(remote_profile(engine.base_url))
            assert str(loading.value) == said
            assert Texts("tr").error(loading.value) == (f"{engine.base_url} adresindeki ofis sunucusu açılıyor "
                                                        "(modelini yüklüyor); 1 sn sonra yeniden deneyin.")
            turn.start()
            wait_until(lambda: any(line.startswith("POST /v1/chat/completions") for line in answered),
                       "the turn answered 'loading'", 60)
        threading.Thread(target=relay, daemon=True).start()
        turn.join(60)
    finally:
        sock.close()
        engine.close()
    [reply] = replies
    assert reply.text and reply.metrics.stop_reason != "failed"


@contextlib.contextmanager
def _stalling_server(go_on: threading.Event, went_on: threading.Event | None = None,
                     note_with_end: bool = False) -> Iterator[str]:
    """A server on 127.0.0.1 that says "Yes", stays silent until ``go_on``, then ends the reply
    (``went_on`` set just before its next word: a reply cannot end on that word unseen), having
    begun to stop before its next word; ``note_with_end``: before its last part, the reply whole."""
    def stalls(listener: socket.socket) -> None:
        conn, _ = listener.accept()
        while conn.recv(65536, socket.MSG_PEEK).startswith(b"GET"):  # the chat command's look at /models first
            with conn:
                conn.recv(65536)
                conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 23\r\n'
                             b'Connection: close\r\n\r\n{"data": [{"id": "m"}]}')
            conn, _ = listener.accept()
        with conn, contextlib.suppress(OSError):
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                         b'data: {"choices": [{"index": 0, "delta": {"content": "Yes"}}]}\n\n')
            go_on.wait(60)  # (set by every test: a bound only; Esc is asserted to end before it)
            if went_on is not None:
                went_on.set()
            # workstation serve begins to stop (its SSE comment line), then ends the reply with
            # llama-server's timings and no usage (a client that did not ask for it)
            end = (b'data: {"choices": [{"index": 0, "delta": {"content": ", go"}, "finish_reason": "stop"}], '
                   b'"timings": {"prompt_n": 7, "cache_n": 3, "prompt_ms": 14.0}}\n\ndata: [DONE]\n\n')
            if not note_with_end:  # (a part that goes on, then the end)
                conn.sendall(stopping_note(30) + b'data: {"choices": [{"index": 0, "delta": {"content": ","}}]}\n\n')
                end = end.replace(b'", go"', b'" go"')
            conn.sendall((stopping_note(30) if note_with_end else b"") + end)
            conn.shutdown(socket.SHUT_WR)  # the end sent, then what is left of the request read: a close
            conn.settimeout(10)            # with unread bytes is a reset, which can lose the end unread
            while conn.recv(65536):
                pass

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        threading.Thread(target=stalls, args=(listener,), daemon=True).start()
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


def test_missing_key_variable_is_one_sentence(server: RunningServer, monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.delenv("WS_REMOTE_TEST_KEY", raising=False)
    with pytest.raises(EngineError, match=r"needs an API key; ask whoever runs it for yours, then set the environment "
                                          r"variable WS_REMOTE_TEST_KEY \(export WS_REMOTE_TEST_KEY=YOUR-KEY, in"):
        RemoteEngine(remote_profile(server.base_url))
    # a profile naming a key file (as the shipped office-server does, beside the variable) is told to
    # fill the file, the way README says, not to set "the environment variable /home/…/api-key"
    key_file = tmp_path / "api-key"  # neither there nor the variable set
    with pytest.raises(EngineError, match=rf"put it on the first line of the file {re.escape(str(key_file))}, "
                                          r"readable by you alone"):
        RemoteEngine(remote_profile(server.base_url, api_key_file=str(key_file)))
    with pytest.raises(ProfileError, match="must be a server.s address starting with http"):
        RemoteEngine(remote_profile("127.0.0.1:8088/v1"))


def test_wrong_key_and_unreachable_server(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", "wrong")
    with pytest.raises(EngineError) as refused:  # it said which headers to send: advice for programmers
        RemoteEngine(remote_profile(server.base_url))
    assert str(refused.value) == (f"The server at {server.base_url} does not know the API key from WS_REMOTE_TEST_KEY; "
                                  "check that it was copied whole, or ask whoever runs the server for yours.")
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", KEY)
    with pytest.raises(EngineError, match="Cannot reach the server"):
        RemoteEngine(remote_profile("http://127.0.0.1:9/v1", timeout_s=5))
    # a server whose connections are never taken (its backlog full: a firewall dropping them reads so):
    # what to do, not "timed out"
    import socket

    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        waiting = [socket.socket() for _ in range(3)]
        for s in waiting:
            s.setblocking(False)
            s.connect_ex(full.getsockname())
        url = f"http://127.0.0.1:{full.getsockname()[1]}/v1"
        with pytest.raises(EngineError) as silent:
            RemoteEngine(remote_profile(url, timeout_s=1))
        for s in waiting:
            s.close()
    assert str(silent.value) == (f"Cannot reach the server at {url}: it did not answer in time; this PC may not "
                                 "reach it over the network, or the office server may be stopped (ask whoever runs "
                                 "the office server)."), str(silent.value)
    # a server stopped since the app connected: the next turn "Lost the connection", never made
    with RemoteEngine(remote_profile("http://127.0.0.1:9/v1", timeout_s=5, model="m"), check=False) as gone, \
            pytest.raises(BackendUnreachable) as down:
        gone.run_chat(HELLO)
    # in plain words: what may be wrong and whom to ask (it said "connection refused or host unreachable")
    assert str(down.value) == ("Cannot reach the server at http://127.0.0.1:9/v1: nothing answers there; the office "
                               "server may be stopped, or this PC cannot reach it over the network (ask whoever runs "
                               "the office server).")
    # a server frozen (kill -STOP: its socket takes the request, nothing answers): the chat said
    # "reading the conversation… 26 s"; after some silent seconds it says the server is slow
    monkeypatch.setattr(remote_module, "QUIET_SAID_AFTER_S", 0.0)  # (5 s in use; no time is asserted)
    with socket.socket() as frozen:
        frozen.bind(("127.0.0.1", 0))
        frozen.listen(4)  # the kernel accepts the connections; nothing reads them
        url = f"http://127.0.0.1:{frozen.getsockname()[1]}/v1"
        with RemoteEngine(remote_profile(url, timeout_s=60, model="m"), check=False) as slow:
            events = slow.stream_chat(HELLO, reading=True)
            said = next(events)
            slow.cancel()  # Esc: "(Esc stops)" waited for the request's timeout_s, no response there to close
            rest = list(events)
            held, _ = frozen.accept()  # the request is still the server's: the turn ended without it
            with held:
                held.setblocking(False)
                held.recv(65536)  # (the request, sent long before)
                with pytest.raises(BlockingIOError):
                    held.recv(1)  # b"" once the client gave up on it
            frozen.close()  # (the request ends: its connection is reset)
    assert isinstance(said, ServerWaiting) and not said.own
    assert [type(e) for e in rest] == [TurnFinished] and rest[0].metrics.stop_reason == "cancelled"
    # a server reading a long prompt, a part every few seconds on a CPU, is not "slow to answer"
    # between its parts: the chat's "reading… 42%" and that ran in turns, a second each

    def reads_slowly(listener: socket.socket, next_part: threading.Event, pause_s: float,
                     replied: threading.Event) -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                         b'data: {"choices": [], "prompt_progress": {"total": 1024, "cache": 0, "processed": 512, '
                         b'"time_ms": 1500}}\n\n')
            next_part.wait(pause_s)  # (the next part: over the second the app listens for)
            conn.sendall(b'data: {"choices": [{"index": 0, "delta": {"content": "Yes"}, "finish_reason": "stop"}]}'
                         b"\n\ndata: [DONE]\n\n")
            replied.set()

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        threading.Thread(target=reads_slowly, args=(listener, threading.Event(), 1.5, threading.Event()),
                         daemon=True).start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        with RemoteEngine(remote_profile(url, timeout_s=60, model="m"), check=False) as reading:
            kinds = [type(e) for e in reading.stream_chat(HELLO, reading=True)]
    assert kinds == [PromptRead, TokenDelta, TurnFinished], kinds
    # Esc once the server said how far it has read ends the turn within a second too: it waited
    # for the server's next part, seconds on a CPU server (here it comes only after the turn ended)
    next_part, replied = threading.Event(), threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        # (the next part only once the turn ended, or after a minute: 10 s was the whole of a
        # turn's start, the 0.3 s and Esc's end, on a busy machine)
        threading.Thread(target=reads_slowly, args=(listener, next_part, 60.0, replied), daemon=True).start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        with RemoteEngine(remote_profile(url, timeout_s=60, model="m"), check=False) as reading:
            events = reading.stream_chat(HELLO, reading=True)
            said = next(events)
            time.sleep(0.3)  # (Esc a moment later, the reply's reader waiting on the socket)
            reading.cancel()
            rest = list(events)
            ended_first = not replied.is_set()
            next_part.set()
    assert isinstance(said, PromptRead)
    assert [type(e) for e in rest] == [TurnFinished] and rest[0].metrics.stop_reason == "cancelled", rest
    assert ended_first, "Esc waited for the server's next part"
    # a server that stops sending in the middle of a reply is said too: the half-written reply
    # stood still without a word (15 s in use; no time is asserted)
    monkeypatch.setattr(remote_module, "STALLED_SAID_AFTER_S", 0.0)
    go_on = threading.Event()
    with _stalling_server(go_on) as url, \
            RemoteEngine(remote_profile(url, timeout_s=60, model="m"), check=False) as stalling:
        events = stalling.stream_chat(HELLO, reading=True)
        first, stalled = next(events), next(events)
        go_on.set()
        rest = list(events)
    assert isinstance(first, TokenDelta) and first.text == "Yes"
    assert isinstance(stalled, ServerWaiting) and stalled.stalled and not stalled.own, stalled
    # the server said it has begun to stop: said once, before the rest of the reply (it said
    # nothing until the cut); the SSE comment skipped as the openai library skips it
    stopping = [e for e in rest if isinstance(e, ServerWaiting) and not e.stalled]
    assert [e.held for e in stopping] == [SERVER_STOPPING], rest
    rest = [e for e in rest if not isinstance(e, ServerWaiting)]
    assert isinstance(rest[-1], TurnFinished) and rest[-1].text == "Yes, go"
    # llama-server's timings read where no usage came: F5's reading speed said "–"
    assert (rest[-1].metrics.prompt_n, rest[-1].metrics.cache_n, rest[-1].metrics.prompt_ms) == (7, 3, 14.0)
    # Esc while it is silent ends the reply within a second, with what came ("Esc stops", the
    # line says): the closed response was read on until the server's next word
    go_on, went_on = threading.Event(), threading.Event()
    with _stalling_server(go_on, went_on) as url, \
            RemoteEngine(remote_profile(url, timeout_s=60, model="m"), check=False) as stalling:
        events = stalling.stream_chat(HELLO, reading=True)
        first, stalled = next(events), next(events)
        stalling.cancel()
        rest = [e for e in events if not isinstance(e, ServerWaiting)]
        ended_first = not went_on.is_set()
        go_on.set()
    assert ended_first, "Esc waited for the server's next word"
    assert [type(e) for e in rest] == [TurnFinished] and rest[0].metrics.stop_reason == "cancelled", rest
    assert rest[0].text == "Yes", rest
    # a reply left by its reader (a stop string, Esc's close) ends its stream, so the server
    # stops writing it: read in a thread of its own, it went on to its end unread
    hung_up = threading.Event()

    def endless_reply(listener: socket.socket) -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
            chunk = b'data: {"choices": [{"index": 0, "delta": {"content": "word "}}]}\n\n'
            try:
                for _ in range(2000):  # (20 s at most)
                    conn.sendall(chunk)
                    time.sleep(0.01)
            except OSError:
                hung_up.set()

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        threading.Thread(target=endless_reply, args=(listener,), daemon=True).start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        with RemoteEngine(remote_profile(url, timeout_s=60, model="m"), check=False) as endless:
            events = endless.stream_chat(HELLO, reading=True)
            assert any(isinstance(event, TokenDelta) for event in events)
            events.close()
            wait_until(hung_up.is_set, "the stream closed once its reader left", 15)


def test_a_wrong_address_says_what_is_wrong(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A base_url ending in /v2 passed `profiles check` when it named a model (and chat then
    said "There is no route /v2/chat/completions"); without one it said "set remote.model". An
    https:// address to a plain server, and a host name that does not exist, both said
    "connection refused or host unreachable"."""
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", KEY)
    root = server.root
    for model in ("serve-test", ""):
        with pytest.raises(EngineError) as wrong:
            RemoteEngine(remote_profile(f"{root}/v2", model=model))
        assert str(wrong.value) == (f"The server at {root}/v2 has no OpenAI-style API at that address "
                                    f"(HTTP 404 for /models); remote.base_url usually ends in /v1, as in {root}/v1.")
    engine = RemoteEngine(remote_profile(f"{root}/v2", model="serve-test"), check=False)  # not asked before the turn
    try:
        with pytest.raises(EngineError, match=r"at that address \(HTTP 404 for /chat/completions\); remote.base_url"):
            engine.run_chat(HELLO)
    finally:
        engine.close()
    tls = f"https://{root.removeprefix('http://')}/v1"
    with pytest.raises(EngineError) as wrong:
        RemoteEngine(remote_profile(tls, timeout_s=5))
    assert str(wrong.value) == (f"Cannot reach the server at {tls}: it does not answer in HTTPS there; "
                                "an office server's address usually starts with http://.")
    # and the server's log says so in one line (h11: "Invalid HTTP request")
    said = "workstation: 127.0.0.1 asked for https://, but this server speaks plain HTTP: its address starts with http://"
    wait_until(lambda: any(line.endswith(said) for line in server.log), f"the server's log line {said!r}", 10)
    assert any(line.endswith(said) for line in server.log) and "Invalid HTTP" not in server.log_text()
    with pytest.raises(EngineError) as wrong:
        RemoteEngine(remote_profile("http://nosuchhost.invalid:8088/v1", timeout_s=5))
    assert str(wrong.value).endswith(": this PC cannot find a computer named nosuchhost.invalid; "
                                     "check the name in remote.base_url.")


def test_chat_command_uses_the_remote_backend(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import yaml

    from workstation.cli import main

    monkeypatch.setenv("WS_REMOTE_TEST_KEY", KEY)
    path = tmp_path / "remote.yaml"
    path.write_text(yaml.safe_dump({
        "name": "remote", "backend": "openai",
        "remote": {"base_url": server.base_url, "api_key_env": "WS_REMOTE_TEST_KEY"},
        "sampling": {"temperature": 0.0, "max_tokens": 8},
    }))
    assert main(["chat", "-p", str(path), "--json", "Say hello."]) == 0
    said = capsys.readouterr()
    out = json.loads(said.out)
    assert out["text"] and out["metrics"]["predicted_n"] > 0
    assert "serves" not in said.err
    # a model the server does not serve: answered all the same (workstation serve answers any
    # name with its own), by another model than the profile names; said, not in silence
    path.write_text(yaml.safe_dump({
        "name": "remote", "backend": "openai",
        "remote": {"base_url": server.base_url, "api_key_env": "WS_REMOTE_TEST_KEY", "model": "llama3.1:8b"},
        "sampling": {"temperature": 0.0, "max_tokens": 4},
    }))
    assert main(["chat", "-p", str(path), "Say hello."]) == 0
    assert f"Note: the server at {server.base_url} serves " in capsys.readouterr().err
    # a server silent in the middle of a reply is said on a terminal, once a silence, as the app
    # says it (chat printed nothing: the half-written reply stood still); a log or a pipe is left as it was
    import io
    import sys

    monkeypatch.setattr(remote_module, "STALLED_SAID_AFTER_S", 0.0)  # (15 s in use; no time is asserted)
    go_on = threading.Event()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> int:
            if "slow to answer" in text:  # the server goes on a while later: more silence, not said again
                threading.Timer(1.5, go_on.set).start()
            return super().write(text)

    terminal = Terminal()
    with _stalling_server(go_on) as url:
        path.write_text(yaml.safe_dump({"name": "remote", "backend": "openai", "remote": {
            "base_url": url, "api_key_env": "WS_REMOTE_TEST_KEY", "model": "m"}}))
        monkeypatch.setattr(sys, "stderr", terminal)
        assert main(["chat", "-p", str(path), "Say hello."]) == 0, terminal.getvalue()
    assert capsys.readouterr().out == "Yes, go\n"
    assert terminal.getvalue().count("the server is slow to answer") == 1, terminal.getvalue()
    assert "the server is slow to answer: nothing more from it for a while (Ctrl-C stops)…\n" in terminal.getvalue()
    assert "the office server is stopping: this reply may be cut off…\n" in terminal.getvalue()


def test_a_desk_pcs_first_reply_after_a_switch_says_no_wrong_reading(remote: RemoteEngine) -> None:
    """The first reply after a profile switch (F3) says whether the conversation was read again,
    the new message apart (``new_n``, the local engine's count). A desk PC had none: the server's
    whole prompt, the question in it, was said "read the conversation again after the switch".
    No server tells the message apart, so a desk PC's reply leaves the note out."""
    from workstation.core.events import finished_turn
    from workstation.core.metrics import switch_reading
    from workstation.tui.widgets.message_view import metrics_line

    long_question = [{"role": "user", "content": "Please list the colours of the rainbow, one a line, and say "
                                                 "which of them are warm colours and which are cool ones. " * 6}]
    m = finished_turn(remote.stream_chat(long_question)).metrics
    assert m.prompt_n > 0 and m.predicted_n > 0
    m.after_switch = True  # (as the app marks a conversation's first reply after a switch: turn.py)
    assert switch_reading(m) is None, (m.prompt_n, m.new_n)
    line = metrics_line(m, Texts("en"))
    assert "switch" not in line, line


def test_a_whole_reply_is_not_said_cut_off_by_a_server_that_stops(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The office server's note that it has begun to stop came with the reply's last part, the
    reply whole: the desk PC said "this reply may be cut off" after all of it (the chat's line
    on the terminal, the app's status line). A reply that ended (finish_reason) is not."""
    import io
    import sys

    import yaml

    from workstation.cli import main

    monkeypatch.setenv("WS_REMOTE_TEST_KEY", "k")
    go_on = threading.Event()
    go_on.set()
    with _stalling_server(go_on, note_with_end=True) as url, \
            RemoteEngine(remote_profile(url, timeout_s=60, model="m"), check=False) as desk:
        events = list(desk.stream_chat(HELLO))
    assert not [e for e in events if isinstance(e, ServerWaiting)], events
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "Yes, go"
    assert events[-1].metrics.stop_reason == "eos"

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    path = tmp_path / "remote.yaml"
    with _stalling_server(go_on, note_with_end=True) as url:
        path.write_text(yaml.safe_dump({"name": "remote", "backend": "openai", "remote": {
            "base_url": url, "api_key_env": "WS_REMOTE_TEST_KEY", "model": "m"}}))
        monkeypatch.setattr(sys, "stderr", terminal)
        assert main(["chat", "-p", str(path), "Say hello."]) == 0, terminal.getvalue()
    assert capsys.readouterr().out == "Yes, go\n"
    assert "cut off" not in terminal.getvalue(), terminal.getvalue()


def test_a_desk_pc_names_the_servers_profile_as_f3_lists_it(
    smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`profiles check` said "answers now, serving office-cpu" (the server's profile file) where F3 on
    the server lists "Office CPU — SmolLM2 135M": both it and F3's check name the profile so
    (``profile_said``, which the server says in each language), in the language asked."""
    import json

    import yaml

    from workstation.cli import main
    from workstation.tui.integrations import server_verdict

    served = write_profile(tmp_path, smollm2_path, name="Office CPU — SmolLM2 135M", name_tr="Ofis CPU'su — SmolLM2")
    with serve(served) as srv:
        path = tmp_path / "desk.yaml"
        path.write_text(yaml.safe_dump({"name": "desk", "backend": "openai", "remote": {"base_url": srv.base_url}}))
        assert main(["profiles", "check", str(path)]) == 0
        assert "answers now, serving Office CPU — SmolLM2 135M\n" in capsys.readouterr().out
        assert main(["profiles", "check", str(path), "--lang", "tr"]) == 0
        assert "şu an yanıt veriyor, Ofis CPU'su — SmolLM2 sunuyor\n" in capsys.readouterr().out
        # and --json names it too (the text said it; the JSON had only the profile's id, "model": "serve-test")
        assert main(["profiles", "check", str(path), "--json"]) == 0
        said = json.loads(capsys.readouterr().out)["server"]
        assert (said["profile"], said["model"], said["ok"]) == ("Office CPU — SmolLM2 135M", "serve-test", True), said
        assert said["model_name"], said
        desk = load_profile(str(path))
        assert server_verdict(desk, Texts("en")) == "The server answers now (its model: Office CPU — SmolLM2 135M)."


def test_profiles_check_names_a_long_profile_whole(
    smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`profiles check`'s first line said "valid (Office server (OpenAI-compa…)": the status
    line's cut (``PROFILE_SAID_MOST``) on a command line, which has no width to keep to. The
    name is whole there, of a local profile and of a desk PC's, and so is the server's profile
    it says it serves."""
    import yaml

    from workstation.cli import main
    from workstation.core.profiles import PROFILE_SAID_MOST

    long_name = "Accounting team's server — SmolLM2 135M for invoices"
    assert len(long_name) > PROFILE_SAID_MOST
    served = write_profile(tmp_path, smollm2_path, name=long_name)
    main(["profiles", "check", str(served)])  # (a local profile: ready or not, its name is the first line)
    assert capsys.readouterr().out.splitlines()[0] == f"serve-test: valid ({long_name})"
    with serve(served) as srv:
        path = tmp_path / "desk.yaml"
        path.write_text(yaml.safe_dump({"name": "Office server (OpenAI-compatible)", "backend": "openai",
                                        "remote": {"base_url": srv.base_url}}))
        assert main(["profiles", "check", str(path)]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[0] == "desk: valid (Office server (OpenAI-compatible))", out
        assert f"answers now, serving {long_name}\n" in out, out


def test_profiles_check_of_a_desk_profile_shows_the_server_and_whether_it_answers(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`profiles check` on a desk PC's profile names the server and asks it, instead of local
    settings (GPU layers, K/V types) that are the server's business."""
    import yaml

    from workstation.cli import main

    monkeypatch.setenv("WS_REMOTE_TEST_KEY", KEY)
    path = tmp_path / "desk.yaml"
    for base_url, model, answer, code in (
        (server.base_url, "", "answers now, serving ", 0),
        ("http://127.0.0.1:9/v1", "", "does not answer now: Cannot reach the server", 1),
        (server.base_url, "gpt-4", "answers, but it serves ", 1),  # a model the server does not have
    ):
        remote = {"base_url": base_url, "api_key_env": "WS_REMOTE_TEST_KEY", **({"model": model} if model else {})}
        path.write_text(yaml.safe_dump({"name": "desk", "backend": "openai", "remote": remote}))
        assert main(["profiles", "check", str(path)]) == code
        out = capsys.readouterr().out
        assert f"server           {base_url}" in out and answer in out, out
        assert "WS_REMOTE_TEST_KEY (set)" in out
        assert "gpu_layers" not in out and "kv_cache" not in out
        # what it sends with every request; speculation is the server's, not "off"
        assert "sampling         temperature 0.7, top_p 0.95" in out and "seed a new one each turn" in out, out
        assert "speculative      the server's" in out
    assert ", not gpt-4; set remote.model to one of those" in out
    # in the app's language, or --lang's (it was English under --lang tr): the server's answer too
    assert main(["profiles", "check", str(path), "--lang", "tr"]) == 1
    out = capsys.readouterr().out
    assert f"  sunucu                         {server.base_url}" in out, out
    assert "  sunucu denetimi                yanıt veriyor, ama gpt-4 değil " in out, out
    assert "WS_REMOTE_TEST_KEY ortam değişkeninden (ayarlı)" in out and "Tohum her turda yeni" in out, out
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", "ws-not-a-key-we-gave")  # refused: it answered, and said no
    path.write_text(yaml.safe_dump({"name": "desk", "backend": "openai",
                                    "remote": {"base_url": server.base_url, "api_key_env": "WS_REMOTE_TEST_KEY"}}))
    assert main(["profiles", "check", str(path)]) == 1
    assert "answers, but: The server at " in capsys.readouterr().out
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", f"  {KEY}\n")  # pasted with spaces and a line break around it
    assert main(["profiles", "check", str(path)]) == 0
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", f"{KEY[:4]} {KEY[4:]}")  # a space inside: not a key
    assert main(["profiles", "check", str(path)]) == 1
    assert "not asked: The API key in WS_REMOTE_TEST_KEY is not a key: it holds a space" in capsys.readouterr().out
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", f"Bearer {KEY}")  # as the header carries it: said so
    assert main(["profiles", "check", str(path)]) == 1
    assert "The key from WS_REMOTE_TEST_KEY starts with 'Bearer '; write only the key, without" in capsys.readouterr().out
    # a server address without http:// is a mistake in the file: refused as the profile is read
    path.write_text(yaml.safe_dump({"name": "desk", "backend": "openai", "remote": {"base_url": "127.0.0.1:8088"}}))
    assert main(["profiles", "check", str(path)]) == 1
    assert "field 'remote.base_url' is '127.0.0.1:8088'; it must be a server's address starting with http://" in capsys.readouterr().err
    path.write_text(yaml.safe_dump({"name": "desk", "backend": "openai", "remote": {"api_key": KEY}}))
    assert main(["profiles", "check", str(path)]) == 1
    assert "remote.api_key is not a profile field: the key stays out of the file" in capsys.readouterr().err
    # the key in a file only its owner reads (api_key_env was the only way: a variable in ~/.profile,
    # which every program of the session sees); a file others may read is refused, as serve's is
    monkeypatch.delenv("WS_REMOTE_TEST_KEY")
    key_file = tmp_path / "api-key"
    key_file.write_text(f"{KEY}\n", encoding="utf-8")
    key_file.chmod(0o600)
    path.write_text(yaml.safe_dump({"name": "desk", "backend": "openai",
                                    "remote": {"base_url": server.base_url, "api_key_file": str(key_file)}}))
    assert main(["profiles", "check", str(path)]) == 0
    assert f"api key          from the file {key_file}" in capsys.readouterr().out
    key_file.chmod(0o640)  # (its group may read it: refused too, as ssh refuses a private key)
    assert main(["profiles", "check", str(path)]) == 1
    assert f"{key_file} can be read by its group, not only by you" in capsys.readouterr().out
    key_file.chmod(0o644)
    assert main(["profiles", "check", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"not asked: The key file (remote.api_key_file) {key_file} can be read by every user of this computer" \
           f", so the key in it is no secret; let only you read it (chmod 600 {key_file}), then try again." in out, out
    # in the language the desk PC speaks (it was English under Turkish, in the app too)
    assert main(["profiles", "check", str(path), "--lang", "tr"]) == 1
    out = capsys.readouterr().out
    assert f"Anahtar dosyası (remote.api_key_file) {key_file} bu bilgisayarın her kullanıcısı tarafından " \
           f"okunabiliyor, yani içindeki anahtar gizli değil; onu yalnızca sizin okuyabileceğiniz hâle getirin " \
           f"(chmod 600 {key_file}), ardından yeniden deneyin." in out, out
    # both, as the shipped office-server.yaml names them: the file first (README tells offices to
    # use it), the variable where there is no such file (a desk set up with it goes on working)
    key_file.chmod(0o600)
    path.write_text(yaml.safe_dump({"name": "desk", "backend": "openai", "remote": {
        "base_url": server.base_url, "api_key_file": str(key_file), "api_key_env": "WS_REMOTE_TEST_KEY"}}))
    assert main(["profiles", "check", str(path)]) == 0
    assert f"api key          from the file {key_file}\n" in capsys.readouterr().out
    key_file.unlink()
    monkeypatch.setenv("WS_REMOTE_TEST_KEY", KEY)
    assert main(["profiles", "check", str(path)]) == 0
    assert f"api key          from WS_REMOTE_TEST_KEY (set; there is no file {key_file})\n" in capsys.readouterr().out
    shipped = load_profile(str(Path(__file__).parent.parent / "profiles" / "office-server.yaml")).remote
    assert (shipped.api_key_file, shipped.api_key_env) == ("~/.config/workstation/api-key", "WORKSTATION_API_KEY")
    # a server elsewhere over http://: where the text goes, said once for each server, as the app
    # says it (every run said it); 0.0.0.0 is not this PC's loopback name, and refuses at once
    path.write_text(yaml.safe_dump({"name": "desk", "backend": "openai", "remote": {"base_url": "http://0.0.0.0:9/v1"}}))
    assert main(["profiles", "check", str(path)]) == 1
    assert "go to the server at 0.0.0.0:9 unencrypted" in capsys.readouterr().out
    assert main(["profiles", "check", str(path)]) == 1
    assert "unencrypted" not in capsys.readouterr().out


def test_a_refusal_reads_its_code_and_headers() -> None:
    """Every slot busy (``server_busy``, as ``workstation serve`` and the OpenAI API answer a
    full queue) says when to try again; an answer without a known code keeps the server's words."""
    import httpx

    from workstation.core.phrases import say
    from workstation.core.remote import REFUSALS, answered_phrase, key_refusal, stopped_reply

    url = "http://office:8088/v1"
    busy = httpx.Response(429, headers={"Retry-After": "7"},
                          json={"error": {"message": "All 4 slots are busy", "code": "server_busy"}})
    assert say([answered_phrase(url, busy)]) == f"The server at {url} is busy with other people's requests; try again in 7 s."
    other = httpx.Response(429, json={"error": {"message": "Slow down.", "code": "something_else"}})
    assert say([answered_phrase(url, other)]) == f"The server at {url} answered HTTP 429: Slow down."
    # an error in the middle of a reply: the server's sentence once ("The server stopped the reply:
    # The server is shutting down, …" said the server twice)
    cut = "The server is shutting down, so the reply was cut off; send it again once the server is back."
    assert say([stopped_reply(cut)]) == cut
    assert say([stopped_reply("out of memory")]) == "The server stopped the reply: out of memory."
    # OpenAI's per-minute limit has the code workstation's held day has: its own words stay
    per_minute = httpx.Response(429, headers={"Retry-After": "20"}, json={"error": {
        "message": "Rate limit reached; try again in 20s", "type": "tokens", "code": "rate_limit_exceeded"}})
    assert say([answered_phrase(url, per_minute)]).endswith("answered HTTP 429: Rate limit reached; try again in 20s.")
    # a 404 is a wrong address only where nothing OpenAI-like answered; Ollama's and vLLM's
    # "no such model" are said in their words
    asked = httpx.Request("POST", f"{url}/chat/completions")
    ollama = httpx.Response(404, request=asked, json={"error": {
        "message": 'model "qwen" not found, try pulling it first', "type": "api_error", "param": None, "code": None}})
    assert say([answered_phrase(url, ollama)]) == f'The server at {url} answered HTTP 404: model "qwen" not found, try pulling it first.'
    vllm = httpx.Response(404, request=asked, json={"object": "error", "message": "The model `qwen` does not exist.",
                                                    "type": "NotFoundError", "param": None, "code": 404})
    assert say([answered_phrase(url, vllm)]) == f"The server at {url} answered HTTP 404: The model `qwen` does not exist."
    page = httpx.Response(404, request=asked, text="404 page not found")
    assert say([answered_phrase(url, page)]).startswith(f"The server at {url} has no OpenAI-style API at that address "
                                                        "(HTTP 404 for /chat/completions)")
    # a server loading its model, when the desk PC's wait ran out: a refusal (the message goes back in the box)
    loading = httpx.Response(503, headers={"Retry-After": "5"}, json={"status": "loading", "error": {
        "message": "The server is loading its model; send the request again in a moment.", "code": "loading"}})
    assert say([answered_phrase(url, loading)]) == (f"The office server at {url} is starting (it is loading its model); "
                                                    "try again in 5 s.")
    assert answered_phrase(url, loading)[0] in REFUSALS
    # by its code, not its English words: every slot busy as a 503 too (a limit of requests being read), a
    # model the server does not have (the OpenAI API's code), and a code not known here in the server's words
    held = httpx.Response(503, headers={"Retry-After": "1"}, json={"error": {
        "message": "This server is handling 64 requests, its limit; try again shortly.", "code": "server_busy"}})
    assert say([answered_phrase(url, held)], Texts("tr").get) == (
        f"{url} adresindeki sunucu başka kişilerin istekleriyle meşgul; 1 sn sonra yeniden deneyin.")
    missing = httpx.Response(404, request=asked, json={"error": {
        "message": "The model `qwen` does not exist", "type": "invalid_request_error", "code": "model_not_found"}})
    assert say([answered_phrase(url, missing, model="qwen")], Texts("tr").get).startswith(
        f"{url} adresindeki sunucu qwen modelini sunmuyor; profildeki remote.model'i")
    assert say([answered_phrase(url, other)], Texts("tr").get) == f"{url} adresindeki sunucu HTTP 429 ile yanıt verdi: Slow down."
    # a revoked key, as a serve older than its code key_revoked answered it: revoked, not "does not know the key"
    revoked = httpx.Response(401, json={"error": {"message": "The API key 'bob' was revoked.",
                                                  "type": "invalid_request_error", "code": "invalid_api_key"}})
    assert say([key_refusal(url, revoked)]) == (f"The server at {url} refused the API key: it was revoked; ask whoever "
                                                "runs the server for a new one.")
    unknown = httpx.Response(401, json={"error": {"message": "Incorrect API key provided: sk-…", "code": "invalid_api_key"}})
    assert say([key_refusal(url, unknown)]).startswith(f"The server at {url} does not know the API key;")
    odd = httpx.Response(429, headers={"Retry-After": "inf"}, json={"error": {"code": "server_busy"}})
    assert say([answered_phrase(url, odd)]).endswith("try again in 1 s.")  # not an OverflowError
    quota = httpx.Response(429, headers={"Retry-After": "3600", "X-RateLimit-Limit-Tokens": "50000"},
                           json={"error": {"message": "...", "code": "insufficient_quota"}})
    noon = 1_700_000_000.0
    assert say([answered_phrase(url, quota, now=noon)]).endswith(
        f"used its 50,000 tokens (pieces of words, as the server counts text) for today; it can answer again at {time.strftime('%H:%M', time.localtime(noon + 3600))}, "
        "or ask whoever runs the server to raise your daily limit.")  # (it named no one who can)


def test_a_local_model_asked_of_a_remote_profile_says_which_to_choose() -> None:
    """`serve -p office-server` (a desk PC's profile) said only that it uses the openai backend."""
    from workstation.core.errors import EngineError
    from workstation.core.scheduler import Scheduler

    # by the name typed, the title after it where it is another (it said the title alone, and "the openai backend")
    with pytest.raises(EngineError, match=r"^The profile 'remote-test' sends its messages to the server at "
                                          r"http://127\.0\.0\.1:9/v1; it has no model on this PC to serve\. Choose a "
                                          r"profile with a model on this PC \('.*profiles list' shows each one's model\)\.$"):
        Scheduler(remote_profile("http://127.0.0.1:9/v1"))
    office = load_profile("office-server")  # -p office-server: its name, then its title
    with pytest.raises(EngineError, match=r"^The profile 'office-server' \(Office server \(OpenAI-compatible\)\) sends"):
        Scheduler(office)


@pytest.mark.parametrize("lang", ["en", "tr"])
def test_the_server_and_a_desk_pc_say_a_contexts_words_on_one_footing(
        server: RunningServer, lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """serve said "each conversation up to about 3,100 words" (the language's words a token) where a
    desk PC said "room for about 3,500 more words" (its replies' own) of the same 4,096 tokens:
    both say it by ``context_basis``: the model's figure for the language as the server says it (the
    replies' own measured figure moved the desk PC's room up after a reply), so the same numbers are the
    same words."""
    from workstation.commands.serve import capacity_words
    from workstation.core.language_words import words_figures
    from workstation.core.metrics import MetricsHistory, TurnMetrics
    from workstation.core.phrases import about_words, context_basis
    from workstation.tui.app import WorkstationApp

    monkeypatch.setenv("WS_REMOTE_TEST_KEY", KEY)
    engine = RemoteEngine(remote_profile(server.base_url))
    try:
        info = engine.info()
    finally:
        engine.close()
    app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language=lang)
    app.engine_info, app.conversation_id = info, 1
    app.profile = remote_profile(server.base_url)  # a desk PC's: no model file here to measure a language on
    t = Texts(lang)
    for measured in (None, 0.85):  # no reply measured yet (the language's), then replies of 85 words a 100 tokens
        history = MetricsHistory()
        history.add(TurnMetrics(predicted_n=100 if measured else 1), words=85 if measured else 0)
        app.history = history
        room = info.n_ctx - history.turns[-1].predicted_n  # what the desk PC has left after that reply
        # (replies measured or not: its model's own figure, as the server says it; in English the language's)
        words = context_basis(t.get, words_figures(t.get, lang, said=info.words_a_token)).count(room)
        assert words in app.context_fill_text(), (app.context_fill_text(), words)
        said = capacity_words(2, room, t, info.words_a_token)
        assert f" {words} " in said, said
    assert about_words(4096) == "3,100"


def test_a_desk_pc_says_the_servers_model_by_its_own_words_a_token(
        server: RunningServer, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A desk PC said the server's SmolLM2 reads "about 1,600 Turkish words" at once (the language's
    general figure: no model file there to measure), where the same model here said about 1,100
    (its tokenizer's own). The server says its model's figures in its /models answer; a desk PC
    says its context by them, and by the language's where an older server says none."""
    from workstation.core import language_words
    from workstation.core.language_words import SAID, model_figures, said_figures, words_figures
    from workstation.core.locales import locale_texts
    from workstation.core.phrases import context_basis, words_per_token
    from workstation.core.remote import check_server
    from workstation.tui.app import WorkstationApp

    monkeypatch.setenv("WS_REMOTE_TEST_KEY", KEY)
    turkish = locale_texts("tr").get
    own = model_figures(smollm2_path, turkish)  # the same model's own figures, measured here
    assert own is not None and own[0] < words_per_token(turkish) * 0.8  # (SmolLM2 spends more on Turkish)
    profile = remote_profile(server.base_url)
    engine = RemoteEngine(profile)
    try:
        info, meta = engine.info(), dict(engine.meta)
    finally:
        engine.close()
    assert set(info.words_a_token) == {"en", "tr"}
    assert words_figures(turkish, "tr", said=info.words_a_token) == own
    assert words_figures(None, "en", said=info.words_a_token) is None  # (English: its general figure holds)
    assert check_server(profile).words_a_token == info.words_a_token  # (F3's check of a profile not loaded)

    app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language="tr")
    app.profile, app.engine_info = profile, info  # a desk PC's, loaded: the line under the box, F3
    assert app.words_basis() == context_basis(turkish, own)
    assert app.words_basis().count(4096) == context_basis(turkish, own).count(4096) != \
        context_basis(turkish).count(4096)

    # a server before it said them: the same answer without the field, the language's figure
    del meta[SAID]
    assert said_figures(meta) == {}
    app.engine_info = dataclasses.replace(info, words_a_token=said_figures(meta))
    assert app.words_basis() == context_basis(turkish) and app.words_basis().per_token == words_per_token(turkish)
    # nor anything but positive numbers read from a server's answer (another kind's meta is its own)
    assert said_figures({SAID: {"tr": "many", "en": -1, "de": True, "fr": 0.5}}) == {"fr": 0.5}
    assert language_words.words_figures(turkish, "tr", said={"tr": 0.3}) is None  # (no English one: not said)


def test_a_reply_that_repeats_itself_stops_on_the_server_and_the_desk_pc_keeps_it_without_the_repeats(
        remote: RemoteEngine) -> None:
    """The server stops a reply going round in circles (core/loops.py); the desk PC was sent
    some of the repeats before it did, and keeps the reply as the server does, said as stopped."""
    looping = [{"role": "user", "content": "Write the word ok five times."}]
    events = list(remote.stream_chat(looping, Sampling(temperature=0.0, max_tokens=300, repeat_penalty=1.0, seed=1)))
    final = events[-1]
    assert isinstance(final, TurnFinished)
    assert final.metrics.stop_reason == "loop" and final.metrics.predicted_n < 300
    streamed = "".join(e.text for e in events if isinstance(e, TokenDelta))
    assert final.text.strip() and streamed.startswith(final.text) and len(streamed) > len(final.text)
    assert final.text.lower().count("five times") == 1  # its first copy, not the repeats


def test_a_desk_pc_whose_profile_keeps_repeats_asks_the_server_not_to_cut_them(remote: RemoteEngine) -> None:
    """A desk PC's profile with ``stop_on_loop: false`` never told the office server, which cut its
    reply at the repeats all the same: it says so to a server that takes the field."""
    looping = [{"role": "user", "content": "Write the word ok five times."}]
    events = list(remote.stream_chat(looping, Sampling(temperature=0.0, max_tokens=120, repeat_penalty=1.0, seed=1,
                                                       stop_on_loop=False)))
    final = events[-1]
    assert isinstance(final, TurnFinished)
    assert final.metrics.stop_reason == "length" and final.metrics.predicted_n == 120, final.metrics
    assert final.text.lower().count("five times") > 1  # the repeats kept, as asked
