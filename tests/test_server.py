"""``workstation serve`` on 127.0.0.1 with the official ``openai`` client (real model, real HTTP)."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from conftest import wait_until
from serve_helpers import ROOT, RunningServer, serve, write_profile

KEY = "test-key-123"
QUESTION = [{"role": "user", "content": "Name three colours of the rainbow."}]


@pytest.fixture(scope="module")
def server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    profile = write_profile(tmp_path_factory.mktemp("serve"), smollm2_path)
    with serve(profile, "--parallel", "4", "--queue", "2", "--max-body", "65536", api_key=KEY) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=120)


def test_models(client: openai.OpenAI, server: RunningServer, smollm2_path: Path) -> None:
    models = client.models.list().data
    assert [m.id for m in models] == ["serve-test"]
    one = client.models.retrieve("serve-test")  # was 404: there was no route /v1/models/serve-test
    assert one.id == "serve-test" and one.model_dump() == models[0].model_dump()
    # Ollama's name for it, as /api/chat takes it, in any case (was 404)
    assert client.models.retrieve("SERVE-TEST:latest").model_dump() == models[0].model_dump()
    with pytest.raises(openai.NotFoundError) as unknown:
        client.models.retrieve("gpt-4")
    assert unknown.value.body["message"] == "This server serves no model 'gpt-4'; it serves serve-test."  # type: ignore[index]
    text = httpx.get(f"{server.base_url}/models", headers=server.headers()).text
    assert smollm2_path.name not in text and str(smollm2_path.parent) not in text  # the path is private


def test_a_slash_at_the_end_of_the_path_is_served(server: RunningServer) -> None:
    """A base URL typed as ``http://host:8088/v1/`` made ``/v1/chat/completions/``, answered
    with a 307 and an empty body that a POST does not follow."""
    ask = {"model": "serve-test", "messages": QUESTION, "max_tokens": 2, "temperature": 0}
    with httpx.Client(headers=server.headers(), timeout=120, follow_redirects=False) as http:
        reply = http.post(f"{server.base_url}/chat/completions/", json=ask)
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["message"]["content"]
        models = http.get(f"{server.base_url}/models//")
        assert models.status_code == 200 and models.json()["data"][0]["id"] == "serve-test"
        assert http.get(f"{server.root}/health/").status_code == 200
        assert http.post(f"{server.base_url}/nowhere/", json=ask).status_code == 404


def test_chat_non_stream_and_stream_agree(client: openai.OpenAI) -> None:
    """Both shapes alike, each chunk with the system_fingerprint (a stream's had none)."""
    full = client.chat.completions.create(model="serve-test", messages=QUESTION, max_tokens=16, temperature=0)
    assert full.system_fingerprint == "workstation"
    text = full.choices[0].message.content
    assert text and full.choices[0].finish_reason in ("stop", "length")
    u = full.usage
    assert u is not None and u.completion_tokens > 0 and u.prompt_tokens > 10
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens

    stream = client.chat.completions.create(
        model="serve-test", messages=QUESTION, max_tokens=16, temperature=0,
        stream=True, stream_options={"include_usage": True},
    )
    deltas, finish, usage = [], None, None
    for chunk in stream:
        assert chunk.system_fingerprint == "workstation"
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                deltas.append(choice.delta.content)
            finish = choice.finish_reason or finish
    assert "".join(deltas) == text  # greedy: same reply both ways
    assert finish == full.choices[0].finish_reason
    assert usage is not None and usage.completion_tokens == u.completion_tokens
    # the second identical request reused the first one's prompt from the KV cache
    assert usage.prompt_tokens_details is not None and usage.prompt_tokens_details.cached_tokens > 0


def test_created_is_when_the_request_came() -> None:
    """OpenAI's ``created`` was when the reply ended (or a stream began), minutes after the
    request for a long one."""
    import time
    from types import SimpleNamespace

    from workstation.core.server.replies import created_at

    # (between two readings of the clock, not within a second of one read after it: a whole
    # second (int) less a moment the process waited for the CPU was more than a second)
    before = time.time()
    ninety_s_ago = SimpleNamespace(t_request=time.perf_counter() - 90)
    created = created_at(ninety_s_ago)  # type: ignore[arg-type]
    assert int(before - 90) <= created <= time.time() - 90, (before, created)


def test_stream_without_include_usage_has_no_usage(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="x", messages=QUESTION, max_tokens=4, stream=True))
    assert chunks and all(c.usage is None for c in chunks)


def test_completions(client: openai.OpenAI) -> None:
    done = client.completions.create(model="x", prompt="The capital of France is", max_tokens=6, temperature=0)
    assert done.choices[0].text and done.choices[0].finish_reason == "length"
    assert done.usage is not None and done.usage.completion_tokens == 6
    streamed = client.completions.create(
        model="x", prompt="The capital of France is", max_tokens=6, temperature=0, stream=True
    )
    assert "".join(c.choices[0].text for c in streamed if c.choices) == done.choices[0].text


def test_bad_requests_get_openai_errors(client: openai.OpenAI, server: RunningServer) -> None:
    from workstation.core.phrases import say
    from workstation.core.remote import answered_phrase
    from workstation.tui.i18n import Texts

    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(model="x", messages=[], max_tokens=4)
    assert "messages" in str(exc.value)
    with pytest.raises(openai.BadRequestError) as exc:
        client.chat.completions.create(model="x", messages=QUESTION, temperature=9)
    assert "temperature" in str(exc.value)
    with pytest.raises(openai.BadRequestError) as exc:  # was answered, as if the user had said nothing
        client.chat.completions.create(model="x", messages=[{"role": "user"}], max_tokens=4)  # type: ignore[typeddict-item]
    assert exc.value.body["message"] == "messages[0].content is required: the text of the user message."  # type: ignore[index]
    r = httpx.post(
        f"{server.base_url}/chat/completions", content=b"{not json",
        headers={**server.headers(), "Content-Type": "application/json"},
    )
    assert r.status_code == 400 and r.json()["error"]["message"] == "The request body is not valid JSON."
    long_text = "lorem ipsum dolor " * 400  # far more tokens than the 1024 context
    with pytest.raises(openai.BadRequestError) as exc:
        client.completions.create(model="x", prompt=long_text, max_tokens=4)
    assert "prompt" in str(exc.value) and "1023" in str(exc.value)
    r = httpx.post(f"{server.base_url}/completions", json={"prompt": "x" * 70_000}, headers=server.headers())
    assert r.status_code == 413 and "65536" in r.json()["error"]["message"]
    # a code and the limit beside the sentence: a desk PC says it in its own language (it had no code)
    assert (r.json()["error"]["code"], r.json()["error"]["limit_bytes"]) == ("request_too_large", 65536)
    assert say([answered_phrase(server.base_url, r)], Texts("tr").get) == (
        f"{server.base_url} adresindeki sunucu en fazla 64 KB boyutunda istek alıyor ve bu istek daha büyük; daha kısa "
        "bir metin veya belge gönderin ya da yeni bir sohbet başlatın.")


def test_wrong_or_missing_key(server: RunningServer) -> None:
    wrong = openai.OpenAI(base_url=server.base_url, api_key="nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model="x", messages=QUESTION, max_tokens=2)
    r = httpx.get(f"{server.base_url}/models")
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    assert httpx.get(f"{server.root}/health").json()["status"] == "ok"  # health needs no key
    assert httpx.get(f"{server.root}/v1/health").json()["status"] == "ok"  # (llama-server's other name: it was 401)
    # nor another method on it: "not allowed" and which are, not "send a key" (llama-server exempts the path)
    r = httpx.post(f"{server.root}/health", json={})
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD", r.text
    r = httpx.post(f"{server.root}/v1/health")  # as curl -X POST sends it: no body, no JSON (was 415 "must be JSON")
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD", r.text
    assert httpx.get(f"{server.root}/metrics").status_code == 401
    assert httpx.post(f"{server.root}/metrics").status_code == 401  # the key first (was 415)
    # a route that takes no POST is 405 and which it takes, whatever the body (was 415 "must be JSON")
    r = httpx.post(f"{server.base_url}/models", content=b"{}", headers={**server.headers(), "Content-Type": "text/plain"})
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD", r.text


def test_shared_system_prompt_is_copied_not_recomputed(client: openai.OpenAI) -> None:
    system = {"role": "system", "content": "You answer questions about the office handbook. " * 25}
    first = [system, {"role": "user", "content": "Write a long essay about printers."}]
    second = [system, {"role": "user", "content": "What is a stapler?"}]
    # keep the first request's slot busy, so the second lands in another slot and copies cells
    busy = client.chat.completions.create(
        model="x", messages=first, max_tokens=400, stream=True, extra_body={"ignore_eos": True}
    )
    try:
        next(iter(busy))  # the role chunk
        next(iter(busy))  # first token: the shared prefix is in the KV cache now
        copied = client.chat.completions.create(model="x", messages=second, max_tokens=12, temperature=0)
    finally:
        busy.close()
    cached = copied.usage.prompt_tokens_details.cached_tokens
    assert cached > 200  # the system prompt, copied from the busy slot
    assert copied.usage.prompt_tokens > cached
    fresh = client.chat.completions.create(model="x", messages=second, max_tokens=12, temperature=0)
    assert fresh.choices[0].message.content == copied.choices[0].message.content


def test_four_concurrent_clients_complete(client: openai.OpenAI) -> None:
    questions = ["What is a spreadsheet?", "Name a fruit.", "Say hello.", "What colour is the sky?"]
    results: dict[int, tuple[str, str | None, int]] = {}

    def ask(i: int) -> None:
        parts, finish, usage = [], None, None
        for chunk in client.chat.completions.create(
            model="x", messages=[{"role": "user", "content": questions[i]}], max_tokens=20,
            temperature=0, stream=True, stream_options={"include_usage": True},
        ):
            usage = chunk.usage or usage
            for c in chunk.choices:
                parts.append(c.delta.content or "")
                finish = c.finish_reason or finish
        results[i] = ("".join(parts), finish, usage.completion_tokens if usage else -1)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(results) == [0, 1, 2, 3]
    for text, finish, n in results.values():
        assert text.strip() and finish in ("stop", "length") and 0 < n <= 20


def test_full_queue_gets_429_and_disconnects_free_slots(server: RunningServer) -> None:
    body = {"model": "x", "prompt": "Once upon a time", "max_tokens": 900, "stream": True, "ignore_eos": True}
    url = f"{server.base_url}/completions"
    address = httpx.URL(url)
    host, port, path = address.host, address.port or 80, address.path
    clients = [httpx.Client(timeout=120, headers=server.headers()) for _ in range(4)]
    streams, readers, waiting = [], [], []
    try:
        for c in clients[:4]:  # fill the 4 slots and wait until each is generating
            s = c.send(c.build_request("POST", url, json=body), stream=True)
            assert s.status_code == 200
            lines = s.iter_lines()  # kept alive: a collected iterator closes its response
            while not next(lines).startswith("data:"):
                pass
            streams.append(s)
            readers.append(lines)
        # 2 wait in the queue: their answer starts with their first token (as llama-server's,
        # so that one the queue gives up is a 429, not a 200 and an error event), so they are
        # sent on sockets of their own, which the client closes while they wait
        waiting = [socket.create_connection((host, port), timeout=120) for _ in range(2)]
        payload = json.dumps(body).encode()
        for w in waiting:
            w.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                      f"Authorization: Bearer {server.api_key}\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
                      + payload)
        wait_until(lambda: server.metric("llamacpp:requests_deferred") == 2, "two requests waiting", 120, every_s=0.1)
        assert server.metric("llamacpp:requests_processing") == 4
        assert server.metric("llamacpp:requests_deferred") == 2
        r = httpx.post(url, json=body, headers=server.headers())
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert r.json()["error"]["type"] == "rate_limit_error"
    finally:
        for w in waiting:
            w.close()
        for s in streams:
            s.close()
        for c in clients:
            c.close()
    # the server notices the disconnects, cancels the generations and frees every slot
    wait_until(lambda: server.metric("llamacpp:requests_processing") == 0 and server.metric("llamacpp:requests_deferred") == 0,
               "every slot freed and the queue empty", 120, every_s=0.1)
    assert server.metric("llamacpp:requests_processing") == 0
    assert server.metric("llamacpp:requests_deferred") == 0
    assert server.metric("workstation:requests_cancelled_total") >= 6


def _serve_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workstation.cli", "serve", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "WORKSTATION_API_KEY": ""},
    )


def test_non_loopback_needs_a_key(server: RunningServer) -> None:
    done = _serve_cli("-p", str(server.profile_path), "--host", "0.0.0.0", "--port", "0")
    assert done.returncode != 0
    assert "without an API key" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("host", "name", "port"), [("127.0.0.1:8080", "127.0.0.1", "8080"), ("[::1]:9000", "[::1]", "9000")])
def test_a_port_written_into_the_host_is_said(host: str, name: str, port: str) -> None:
    """`--host 127.0.0.1:8080` was refused for want of an API key, not told to use --port."""
    from workstation.core.server.process import ServeError, check_host

    with pytest.raises(ServeError) as caught:
        check_host(host, None)
    assert str(caught.value) == f"--host is {host}; give the port on its own: --host {name} --port {port}."
    from workstation.tui.i18n import Texts  # (serve --lang tr, or a Turkish PC: it was English)

    assert Texts("tr").error(caught.value) == f"--host değeri {host}; bağlantı noktasını ayrıca verin: --host {name} --port {port}."
    check_host("::1", None)  # an IPv6 address alone: no port in it


def test_a_host_that_is_no_address_is_told_so_before_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    """`--host "not a host"` was refused for want of an API key; no key would have helped."""
    from workstation.cli import main
    from workstation.core.addresses import network_addresses
    from workstation.core.server.process import ServeError, check_host

    with pytest.raises(ServeError) as caught:
        check_host("300.1.1.1", None)
    assert str(caught.value) == "Cannot bind to 300.1.1.1: no such address on this machine."
    # another PC's address said "Cannot assign requested address": it says so, and what works here
    other = "203.0.113.7"  # (TEST-NET-3: no PC's own)
    assert other not in network_addresses({socket.AF_INET})
    assert main(["serve", "--host", other, "--port", "0", "--api-key", "k" * 16]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"workstation: {other} is not one of this PC's addresses; ") and err.count("\n") == 1, err
    assert "0.0.0.0 (all of them) or on 127.0.0.1 (this PC alone)." in err and "Cannot assign" not in err
    with pytest.raises(ServeError, match="without an API key"):
        check_host("0.0.0.0", None)
    # an operator's key anyone on the network could guess opened the whole API ('--api-key secret' was taken)
    with pytest.raises(ServeError, match="is 6 characters long, short enough to be guessed by anyone who reaches 0.0.0.0"):
        check_host("0.0.0.0", "secret", person_keys=True)
    check_host("0.0.0.0", "x" * 16)
    check_host("127.0.0.1", "k")  # (this PC's own users only)


def test_port_in_use_is_one_sentence(server: RunningServer) -> None:
    port = server.root.rsplit(":", 1)[1]
    done = _serve_cli("-p", str(server.profile_path), "--port", port)
    assert done.returncode != 0
    assert f"Port {port} on 127.0.0.1 is already in use" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    # the TUI's Ctrl+G says it in Turkish too (it was English inside the Turkish sentence)
    from workstation.core.server.process import ServeError, bind_socket
    from workstation.tui.i18n import Texts

    with pytest.raises(ServeError) as caught:
        bind_socket("127.0.0.1", int(port))
    assert str(caught.value) in done.stderr
    assert Texts("tr").error(caught.value).startswith(f"127.0.0.1 üzerindeki {port} numaralı bağlantı noktası zaten")
    # and the command line says it in its language (serve took no --lang: English on a Turkish PC)
    done = _serve_cli("-p", str(server.profile_path), "--port", port, "--lang", "tr")
    assert done.stderr == f"workstation: {Texts('tr').error(caught.value)}\n", done.stderr


def test_a_second_server_on_one_data_folder_is_refused_and_a_killed_ones_lock_is_not(
        smollm2_path: Path, tmp_path: Path) -> None:
    """A second `serve` on the same data folder started without a word, and each counted the
    day's tokens on its own: everyone's day limit doubled. It is refused in one sentence (the
    first one's process and port); on that same port, that the port is that server's. A server
    killed (SIGKILL) leaves no lock behind: the next one starts."""
    import os
    import signal

    data = tmp_path / "data"
    data.mkdir()
    profile = write_profile(tmp_path, smollm2_path)
    env = {**os.environ, "WORKSTATION_API_KEY": "", "WORKSTATION_DATA": str(data)}

    def second(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "workstation.cli", "serve", "-p", str(profile), *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)

    with serve(profile, data=data) as first:
        port, pid = first.root.rsplit(":", 1)[1], first.proc.pid
        done = second("--port", "0")
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert done.stderr == (f"workstation: Another office server already runs on this data folder (process {pid}, "
                               f"port {port}): stop it first, or give this one another data folder with "
                               "WORKSTATION_DATA.\n"), done.stderr
        done = second("--port", port)
        assert done.returncode != 0
        assert done.stderr == (f"workstation: Port {port} on 127.0.0.1 is already in use by the office server already "
                               f"running from this data folder (process {pid}): use that one, or stop it first.\n")
        os.kill(pid, signal.SIGKILL)
        first.proc.wait(timeout=30)
    with serve(profile, data=data) as again:  # (the killed one's lock went with it)
        assert httpx.get(f"{again.root}/health", timeout=30).json()["status"] == "ok"


def test_a_server_loading_its_model_answers_loading() -> None:
    """While `serve` loaded the model its port took connections and answered none: a load
    balancer's /health hung (a minute for a large model), as a hung server's would. Each is
    answered now, 503 "loading" with Retry-After, as llama-server answers; what comes once the
    model is loaded waits for the server proper."""
    from workstation.core.server.process import answering_while_loading, bind_socket

    sock = bind_socket("127.0.0.1", 0)
    root = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        with answering_while_loading([sock]), socket.create_connection(sock.getsockname()[:2]) as idle:
            health = httpx.get(f"{root}/health", timeout=30)  # (answered while a connection that sent
            assert (health.status_code, health.json()["status"]) == (503, "loading")  # nothing waits: not after it)
            idle.setblocking(False)
            with pytest.raises(BlockingIOError):
                idle.recv(100)
            assert health.headers["retry-after"] == "5"
            with pytest.raises(openai.InternalServerError) as caught:  # a client's request: why, in its words
                openai.OpenAI(base_url=f"{root}/v1", api_key="k", max_retries=0).chat.completions.create(
                    model="m", messages=QUESTION)
            assert caught.value.status_code == 503
            assert caught.value.body["message"] == "The server is loading its model; send the request again in a moment."  # type: ignore[index]
        with socket.create_connection(sock.getsockname()[:2]):
            conn, _ = sock.accept()  # (left in the queue for uvicorn)
            conn.close()
    finally:
        sock.close()


def test_a_service_reloaded_while_it_loads_its_model_goes_on() -> None:
    """`systemctl reload` (SIGHUP, no terminal) while the model loaded killed the server: a
    death by SIGHUP, which systemd counts as a clean stop, so it was not started again. The
    load is in ``hang_up_taken(SIG_DFL)`` (a terminal's SIGHUP still ends it there)."""
    code = ("import os, signal\nfrom workstation.core.server.process import hang_up_taken\n"
            "with hang_up_taken(signal.SIG_DFL):\n    os.kill(os.getpid(), signal.SIGHUP)\nprint('went on')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          start_new_session=True)  # (no terminal, as a service)
    assert (done.returncode, done.stdout) == (0, "went on\n"), done.stderr
    assert done.stderr.startswith("workstation: SIGHUP received: nothing to reload, so the server goes on"), done.stderr


def test_serve_process_helper(server: RunningServer) -> None:
    from workstation.core.server import ServeError, ServeProcess

    with pytest.raises(ServeError, match="without an API key"):
        ServeProcess(str(server.profile_path), host="0.0.0.0", port=0)
    proc = ServeProcess(str(server.profile_path), port=0, parallel=1)
    try:
        assert proc.alive and proc.url.startswith("http://127.0.0.1:")
        assert httpx.get(proc.url.removesuffix("/v1") + "/health").json()["status"] == "ok"
    finally:
        proc.stop()
    assert not proc.alive
    # killed by the system while it loads (memory ran out): the sentence the app and chat say of
    # their own engine, not "did not start: it exited" / "did not answer in time"
    import psutil

    running = {child.pid for child in psutil.Process().children()}  # (the fixture's server among them)

    def kill_it_loading() -> None:
        while True:
            for child in psutil.Process().children():
                with contextlib.suppress(psutil.Error):
                    if child.pid not in running and "serve" in child.cmdline():
                        child.kill()
                        return

    killer = threading.Thread(target=kill_it_loading, daemon=True)
    killer.start()
    with pytest.raises(ServeError, match=r"^The computer ran out of memory while loading the model, so the system "
                                         r"stopped it; close other programs, lower Context"):
        ServeProcess(str(server.profile_path), port=0, parallel=1)
    killer.join(timeout=30)


# --- llama-server's native endpoints and small compatibility points (issue 17) -------------------
def test_tokenize_detokenize_and_apply_template(server: RunningServer, client: openai.OpenAI) -> None:
    h = server.headers()
    text = "The capital of France is"
    tokens = httpx.post(f"{server.root}/tokenize", json={"content": text}, headers=h).json()["tokens"]
    assert tokens and all(isinstance(t, int) for t in tokens)
    back = httpx.post(f"{server.root}/detokenize", json={"tokens": tokens}, headers=h).json()["content"]
    assert back == text
    # /tokenize with add_special counts what /v1/completions feeds the model (the remote engine
    # counts tokens this way)
    counted = httpx.post(f"{server.root}/tokenize", json={"content": text, "add_special": True}, headers=h).json()
    done = client.completions.create(model="x", prompt=text, max_tokens=1, temperature=0)
    assert done.usage is not None and done.usage.prompt_tokens == len(counted["tokens"])
    # pieces: text, or the bytes of a piece that is not valid UTF-8 alone (an emoji split in bytes)
    llama = "a llama \U0001f999"
    pieces = httpx.post(f"{server.root}/tokenize", json={"content": llama, "with_pieces": True}, headers=h).json()
    raw = b"".join(p["piece"].encode() if isinstance(p["piece"], str) else bytes(p["piece"]) for p in pieces["tokens"])
    assert raw == llama.encode()
    assert [p["id"] for p in pieces["tokens"]] == httpx.post(
        f"{server.root}/tokenize", json={"content": llama}, headers=h).json()["tokens"]
    # /apply-template renders what /v1/chat/completions tokenizes
    prompt = httpx.post(f"{server.root}/apply-template", json={"messages": QUESTION}, headers=h).json()["prompt"]
    assert QUESTION[0]["content"] in prompt
    n_template = len(httpx.post(f"{server.root}/tokenize", json={"content": prompt}, headers=h).json()["tokens"])
    chat = client.chat.completions.create(model="x", messages=QUESTION, max_tokens=1, temperature=0)
    assert chat.usage is not None and chat.usage.prompt_tokens == n_template
    # bad input: one sentence each
    r = httpx.post(f"{server.root}/detokenize", json={"tokens": [10**9]}, headers=h)
    assert r.status_code == 400 and r.json()["error"]["param"] == "tokens"
    r = httpx.post(f"{server.root}/tokenize", json={"content": 5}, headers=h)
    assert r.status_code == 400 and r.json()["error"]["param"] == "content"
    assert httpx.post(f"{server.root}/tokenize", json={"content": "x"}).status_code == 401  # key needed


def test_text_parts_are_joined_with_newlines(server: RunningServer) -> None:
    parts = [{"type": "text", "text": "first part"}, {"type": "text", "text": "second part"}]
    body = {"messages": [{"role": "user", "content": parts}]}
    prompt = httpx.post(f"{server.root}/apply-template", json=body, headers=server.headers()).json()["prompt"]
    assert "first part\nsecond part" in prompt
    # a list with no part, or a text part with no text, is said as such (it was "cannot read (only text)")
    for content, said in [([], "messages[0].content is an empty list"),
                          ([parts[0], {"type": "text"}], "messages[0].content[1] is a text part without its 'text'"),
                          ([{"type": "image_url", "image_url": {"url": "x"}}], "cannot read (only text)")]:
        r = httpx.post(f"{server.base_url}/chat/completions", headers=server.headers(),
                       json={"messages": [{"role": "user", "content": content}], "max_tokens": 2})
        assert r.status_code == 400 and said in r.json()["error"]["message"], r.text
    talk = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": []}, {"role": "user", "content": "Hello"}]
    r = httpx.post(f"{server.base_url}/chat/completions", headers=server.headers(), json={"messages": talk, "max_tokens": 2})
    assert r.status_code == 200, r.text  # an assistant's empty list: an empty reply, as null is


def test_two_trailing_assistant_messages_are_refused(client: openai.OpenAI) -> None:
    messages = [*QUESTION, {"role": "assistant", "content": "Red,"}, {"role": "assistant", "content": "green"}]
    with pytest.raises(openai.BadRequestError, match="two assistant messages"):
        client.chat.completions.create(model="x", messages=messages, max_tokens=2)  # type: ignore[arg-type]
    one = client.chat.completions.create(model="x", messages=[*QUESTION, messages[2]], max_tokens=2)  # type: ignore[list-item]
    assert one.choices[0].finish_reason in ("stop", "length")


def test_x_api_key_header_is_accepted(server: RunningServer) -> None:
    assert httpx.get(f"{server.base_url}/models", headers={"X-Api-Key": KEY}).status_code == 200
    r = httpx.get(f"{server.base_url}/models", headers={"X-Api-Key": "wrong"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"


def test_busy_slots_metric_is_a_gauge(server: RunningServer) -> None:
    text = httpx.get(f"{server.root}/metrics", headers=server.headers()).text
    assert "# TYPE llamacpp:n_busy_slots_per_decode gauge" in text
    assert "# TYPE llamacpp:prompt_tokens_total counter" in text


def _metrics(srv: RunningServer) -> dict[str, float]:
    text = httpx.get(f"{srv.root}/metrics", headers=srv.headers(), timeout=30).text
    return {name: float(value) for name, _, value in (line.partition(" ") for line in text.splitlines())
            if name and not name.startswith("#") and "{" not in name}


def test_the_servers_counters_add_up_what_its_replies_said(smollm2_path: Path, tmp_path: Path) -> None:
    """/metrics' counters were only ever looked at for their # TYPE lines: a counter that never
    moved, or counted another thing, passed. After requests of known usage they say the same
    sums; a stream its client left is counted cancelled, one the full server refused rejected
    (and neither as a request answered twice)."""
    profile = write_profile(tmp_path, smollm2_path)
    with serve(profile, "--parallel", "1", "--queue", "0", api_key=KEY) as srv:
        url = f"{srv.base_url}/chat/completions"
        usages, timings = [], []
        for question in ("Name a fruit.", "What is a stapler?", "Say hello to the office, please."):
            body = {"messages": [{"role": "user", "content": question}], "max_tokens": 8, "temperature": 0}
            r = httpx.post(url, json=body, headers=srv.headers(), timeout=120)
            assert r.status_code == 200, r.text
            usages.append(r.json()["usage"])
            timings.append(r.json()["timings"])
        m = _metrics(srv)
        predicted = sum(u["completion_tokens"] for u in usages)
        cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
        assert predicted > 3 and m["llamacpp:tokens_predicted_total"] == predicted, (m, usages)
        assert m["llamacpp:prompt_tokens_total"] == sum(u["prompt_tokens"] for u in usages) - cached, (m, usages)
        assert m["llamacpp:prompt_tokens_total"] == sum(t["prompt_n"] for t in timings)
        assert m["workstation:prompt_tokens_cached_total"] == cached
        assert m["workstation:requests_total"] == 3
        assert m["workstation:requests_rejected_total"] == m["workstation:requests_cancelled_total"] == 0
        # one slot: each decode had one request in it; each reply's first token came with its
        # prompt's decode, each other one with a decode of its own
        assert m["llamacpp:n_busy_slots_per_decode"] == 1.0
        assert m["llamacpp:n_decode_total"] >= predicted
        assert m["llamacpp:prompt_seconds_total"] > 0 and m["llamacpp:tokens_predicted_seconds_total"] > 0
        assert 0 < m["workstation:decode_seconds_total"]
        assert m["workstation:busy_seconds_total"] > 0
        # the one slot kept busy and no queue: the next request is refused, and counted so
        busy = {"messages": QUESTION, "max_tokens": 900, "stream": True, "ignore_eos": True}
        with httpx.Client(timeout=120, headers=srv.headers()) as http:
            s = http.send(http.build_request("POST", url, json=busy), stream=True)
            try:
                assert s.status_code == 200
                lines = s.iter_lines()
                while not next(lines).startswith("data:"):
                    pass
                refused = httpx.post(url, json=body, headers=srv.headers(), timeout=120)
                assert refused.status_code == 429
                assert _metrics(srv)["workstation:requests_rejected_total"] == 1
            finally:
                s.close()  # its client goes away mid-reply: cancelled
        wait_until(lambda: _metrics(srv)["workstation:requests_cancelled_total"] == 1, "the stream counted cancelled",
                   120, every_s=0.1)
        after = _metrics(srv)
        assert after["workstation:requests_total"] == 4  # the stream; not the one refused
        assert after["workstation:requests_rejected_total"] == 1
        assert after["llamacpp:tokens_predicted_total"] > predicted  # the stream's tokens, up to where it was left
        assert after["llamacpp:n_decode_total"] > m["llamacpp:n_decode_total"]


def test_usage_chunk_carries_timings(server: RunningServer) -> None:
    body = {"messages": QUESTION, "max_tokens": 5, "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body, headers=server.headers(),
                      timeout=120) as r:
        events = [line[6:] for line in r.iter_lines() if line.startswith("data: {")]
    chunks = [json.loads(event) for event in events]
    # compact, as OpenAI and llama-server write them (each ':' and ',' had a space after it)
    assert events == [json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in chunks]
    last = chunks[-1]
    assert last["choices"] == [] and last["usage"]["completion_tokens"] > 0
    assert last["timings"]["predicted_n"] == last["usage"]["completion_tokens"]
    assert last["timings"]["prompt_n"] + last["timings"]["cache_n"] == last["usage"]["prompt_tokens"]


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_ctrl_c_ends_the_replies_being_written_and_records_them(
    smollm2_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stop: str
) -> None:
    """Ctrl+C on `serve` while replies were being written printed uvicorn's 40-line traceback
    after 3 s (it cancelled them), and those replies never reached `usage` or the audit trail.
    Each reply now ends with a sentence to its client (an error event in a stream, 503 for the
    rest) and is recorded with the tokens it got; the server says one line and exits 130. The
    same for SIGTERM (a service stopped), which uvicorn raised again once it had stopped: the
    process died before the records were written. And SIGHUP (its terminal or SSH session
    closed), which killed it at once: a stream cut without a word, nothing recorded. A service
    stopped is a clean stop (0; 130 made a service manager call every stop a failure).
    A service (no terminal) takes SIGHUP as an admin's reload: it stopped, with 0, so a service
    restarted on failure stayed down; its log now says there is nothing to reload, and it serves on."""
    import signal

    from workstation.cli import main
    from workstation.core.phrases import say
    from workstation.core.remote import stopped_reply
    from workstation.tui.i18n import Texts

    data = tmp_path / "data"
    body = {"messages": QUESTION, "max_tokens": 900, "ignore_eos": True}
    got: dict[str, object] = {}
    # Ctrl-C's run in Turkish: its sentences in the command line's language, its access log English (a log format)
    lang = ["--lang", "tr"] if stop == "SIGINT" else []
    with serve(write_profile(tmp_path, smollm2_path), "--parallel", "2", "--log-level", "info", "--shutdown-grace", "0",
               *lang, data=data, terminal={"SIGHUP": True, "SIGTERM": False}.get(stop)) as srv:
        if stop == "SIGTERM":  # a service's "systemctl reload": said, and the server goes on
            srv.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "SIGHUP received: nothing to reload" in srv.log_text(), "the reload's line", 10)
            assert srv.proc.poll() is None and httpx.get(f"{srv.root}/health", timeout=30).status_code == 200

        arrived: list[str] = []  # the stream's events as they come
        noted: list[tuple[int, str]] = []  # its SSE comment lines, after how many events

        def streamed() -> None:
            with httpx.stream("POST", f"{srv.base_url}/chat/completions", json={**body, "stream": True},
                              timeout=120) as r:
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        arrived.append(line)
                    elif line.startswith(":"):
                        noted.append((len(arrived), line))
            got["stream"] = arrived

        def whole() -> None:
            r = httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=120)
            got["whole"] = (r.status_code, r.json())

        def queued() -> None:  # waits for a slot when the server stops: 503 before its stream
            r = httpx.post(f"{srv.base_url}/chat/completions", json={**body, "stream": True}, timeout=120)
            got["queued"] = r.status_code

        clients = [threading.Thread(target=streamed), threading.Thread(target=whole)]
        for c in clients:
            c.start()
        def health() -> dict:
            return httpx.get(f"{srv.root}/health", timeout=30).json()

        wait_until(lambda: health()["slots_processing"] >= 2, "both requests in their slots", 120)
        clients.append(threading.Thread(target=queued))
        clients[-1].start()
        wait_until(lambda: health()["requests_deferred"] >= 1, "the third request waiting for a slot", 120)
        wait_until(lambda: len(arrived) >= 4, "the streamed reply under way", 120)  # (it slept 0.5 s)
        srv.proc.send_signal(getattr(signal, stop))
        for c in clients:
            c.join(timeout=60)
        assert srv.proc.wait(timeout=30) == (130 if stop == "SIGINT" else 0)
        # Ctrl-C: "stopped.", as every command says it (it said "stopped (SIGINT)."); a service's log: the signal
        last = "workstation: durduruldu." if stop == "SIGINT" else f"workstation: stopped ({stop})."
        assert Texts("en")("commands.stopped") == "stopped."  # (English: as every command says it)
        if lang:  # where it serves, who it answers at once: said in Turkish, the addresses as they are
            assert re.fullmatch(r"workstation: \S+ \(\S+\) sunuluyor: http://127\.0\.0\.1:\d+/v1, Ollama API'si: "
                                r"http://127\.0\.0\.1:\d+\. Sunucu aynı anda en çok 2 kişiye yanıt verir; her sohbet "
                                r"yaklaşık [\d.]+ sözcüğe \([\d.]+ token\) kadar sürebilir\. Ctrl-C durdurur\.",
                                srv.log[0]), srv.log[0]
        wait_until(lambda: srv.log_text().rstrip().endswith(last), "its log's last line", 10)
        log = srv.log_text()
    said = "The server is shutting down, so the reply was cut off; send it again once the server is back."
    stream = got["stream"]
    assert isinstance(stream, list) and len(stream) > 3  # a part of the reply, then why it ended
    cut = json.loads(stream[-1][6:])["error"]
    assert (cut["message"], cut["code"]) == (said, "shutting_down")
    # the stop said inside the stream first, as an SSE comment (SSE clients skip it; a desk PC reads it)
    [(at, note)] = noted
    # (with no grace: "now", where it said "within 0 s")
    assert note == ": shutting_down: the server is stopping; this reply may be cut off now" and 0 < at < len(stream)
    assert got["whole"] == (503, {"error": {"message": said, "type": "server_error", "param": None,
                                            "code": "shutting_down"}})
    # a desk PC reads the event by its code, in its own language (it said the server's English sentence)
    assert say([stopped_reply(cut)], Texts("tr").get) == ("Ofis sunucusu kapanıyor ya da yeniden başlıyor, bu yüzden "
                                                         "yanıt yarıda kesildi; sunucu geri geldiğinde yeniden gönderin.")
    assert got["queued"] == 503  # (it was a 200 and an error event)
    assert "Traceback" not in log and "ERROR" not in log and "could not be delivered" not in log, log
    # --log-level info: a line a request, each line with its time (the log told neither)
    # (and why: the server's stop cut them off)
    assert len(re.findall(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d INFO: +\(shared\) 127\.0\.0\.1 chat 503 \d+\+\d+ "
                          r"tokens in \d+\.\d\d s \(cut: server stopping\)$", log, re.M)) == 3, log
    assert log.splitlines()[-1] == last
    monkeypatch.setenv("WORKSTATION_DATA", str(data))
    capsys.readouterr()
    assert main(["usage", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    # (what they spent kept apart: a reply the stop cut off is not charged, as the key's day leaves it out)
    assert row["requests"] == 3 and row["errors"] == 3 and row["completion_tokens"] == 0 and row["cut_tokens"] >= 4, row
    assert main(["audit", "verify", "--json"]) == 0
    audit = [json.loads(line) for f in sorted((data / "audit").glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert [a.get("status") for a in audit if a.get("route") == "chat"] == [503, 503, 503], audit


def test_a_stop_lets_the_replies_being_written_finish(smollm2_path: Path, tmp_path: Path) -> None:
    """`systemctl restart` for an upgrade (SIGTERM) cut every reply being written mid-sentence.
    Now new requests are refused (503, Retry-After; /health "stopping") while the replies under
    way finish, for up to --shutdown-grace (30 s), the log saying how many it waits for; a
    second SIGTERM ends those left, each told to its client; the exit is 0. /health's 503s,
    polled each second by a load balancer, were a line each at --log-level info: one now."""
    import signal

    body = {"messages": QUESTION, "ignore_eos": True}
    got: dict[str, object] = {}
    arrived: list[str] = []
    notes: list[str] = []
    with serve(write_profile(tmp_path, smollm2_path), "--parallel", "2", "--log-level", "info", terminal=False) as srv:

        def short() -> None:
            with httpx.stream("POST", f"{srv.base_url}/chat/completions", json={**body, "max_tokens": 40, "stream": True},
                              timeout=120) as r:
                for line in r.iter_lines():
                    if line.startswith(": "):  # (the stop's note, an SSE comment)
                        notes.append(line)
                    elif line.startswith("data: "):
                        arrived.append(line)

        def long() -> None:
            r = httpx.post(f"{srv.base_url}/chat/completions", json={**body, "max_tokens": 900}, timeout=120)
            got["long"] = (r.status_code, r.json())

        clients = [threading.Thread(target=short), threading.Thread(target=long)]
        for c in clients:
            c.start()
        wait_until(lambda: httpx.get(f"{srv.root}/health", timeout=30).json()["slots_processing"] >= 2,
                   "both requests in their slots", 120)
        wait_until(lambda: len(arrived) >= 2, "the short reply under way", 120)
        srv.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: "waiting up to 30 s for the 2 replies being written" in srv.log_text(), "the stop's line", 10)
        for _ in range(3):  # a load balancer's polls: the change is one line at info, not a line each
            health = httpx.get(f"{srv.root}/health", timeout=30)
            assert health.status_code == 503 and health.json()["status"] == "stopping"
        refused = httpx.post(f"{srv.base_url}/chat/completions", json={**body, "max_tokens": 2}, timeout=30)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5", refused.text
        # the lists of models too (they said 200: a client checking the model first took it as serving)
        for path in ("/v1/models", "/v1/models/serve-test", "/props", "/api/tags", "/api/ps"):
            listed = httpx.get(f"{srv.root}{path}", timeout=30)
            assert listed.status_code == 503 and listed.headers["retry-after"] == "5", (path, listed.text)
        shown = httpx.post(f"{srv.root}/api/show", json={"model": "serve-test"}, timeout=30)
        assert shown.status_code == 503 and shown.json() == {"error": "The server is shutting down; send the request "
                                                             "again once it is back."}, shown.text
        clients[0].join(timeout=60)
        assert arrived[-1] == "data: [DONE]" and '"finish_reason":"length"' in arrived[-2]  # finished whole
        # what is left of the 30 s, in whole seconds (it said the whole grace however much had gone)
        if notes:  # (none where its end came in the write after the stop: a whole reply is not "cut off")
            [note] = notes
            left = re.fullmatch(r": shutting_down: the server is stopping; this reply may be cut off within (\d+) s",
                                note)
            assert left is not None and 1 <= int(left[1]) <= 30, note
        assert srv.proc.poll() is None and "long" not in got  # the long one goes on meanwhile
        srv.proc.send_signal(signal.SIGTERM)  # a second stop: at once
        clients[1].join(timeout=60)
        assert srv.proc.wait(timeout=30) == 0
        wait_until(lambda: "workstation: stopped (SIGTERM)." in srv.log_text(), "its last line", 10)
        log = srv.log_text()
    assert got["long"] == (503, {"error": {"message": "The server is shutting down, so the reply was cut off; send it "
                                           "again once the server is back.", "type": "server_error", "param": None,
                                           "code": "shutting_down"}})
    assert "1 reply still being written was cut off (stopped again)" in log and "Traceback" not in log, log
    assert log.count('workstation: /health now answers 503 "stopping".') == 1 and "GET /health" not in log, log


def test_embeddings_are_refused_with_why(client: openai.OpenAI) -> None:
    """A RAG script's ``embeddings.create`` got 404 "There is no route /v1/embeddings"; as
    llama-server not started for them, 501 says this server makes none and where to get them."""
    with pytest.raises(openai.APIStatusError) as refused:
        client.embeddings.create(model="serve-test", input="hello")
    assert refused.value.status_code == 501
    assert "makes no embeddings" in refused.value.message and "llama-server --embeddings" in refused.value.message
    rerank = httpx.post(str(client.base_url).rstrip("/") + "/rerank", json={}, headers={"Authorization": f"Bearer {KEY}"})
    assert rerank.status_code == 501 and "does no reranking" in rerank.json()["error"]["message"]
    # never served, so not to be tried again: the openai library retried the 501 twice (any 5xx)
    assert rerank.headers["x-should-retry"] == "false"
    # nothing is told without the key, as on every other route (llama-server checks it before routing):
    # the 501 answered first; a route not here, a method a route does not take, too
    root = str(client.base_url).rstrip("/").removesuffix("/v1")
    asked = [("POST", "/v1/embeddings"), ("POST", "/rerank"), ("POST", "/v1/nowhere"), ("GET", "/v1/chat/completions")]
    for method, path in asked:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            r = httpx.request(method, root + path, json={} if method == "POST" else None, headers=headers)
            assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key", (method, path, r.text)
    assert httpx.get(f"{root}/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"}).status_code == 405


def test_responses_api_answers_whole_streamed_and_with_tool_calls(server: RunningServer) -> None:
    """OpenAI's Responses API (``client.responses.create``, which newer tools call): it was 404
    "There is no route /v1/responses". Its input, answer and events in OpenAI's shapes."""
    url, headers = f"{server.base_url}/responses", server.headers()
    body = {"model": "serve-test", "instructions": "Answer briefly.", "max_output_tokens": 3,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "Name a colour."}]}]}
    whole = httpx.post(url, json=body, headers=headers, timeout=120).json()
    assert whole["object"] == "response" and whole["store"] is False and whole["instructions"] == "Answer briefly."
    assert whole["status"] == "incomplete" and whole["incomplete_details"] == {"reason": "max_output_tokens"}
    [message] = whole["output"]
    assert message["type"] == "message" and message["role"] == "assistant" and message["status"] == "incomplete"
    assert message["content"][0]["type"] == "output_text" and message["content"][0]["text"]
    assert whole["usage"]["output_tokens"] == 3 and whole["usage"]["total_tokens"] > 3
    assert type(whole["created_at"]) is int and whole["max_output_tokens"] == 3  # (OpenAI's type: it was a float)
    # -1: as long as the context allows, as the chat route's max_tokens takes it (it was a 400 here)
    endless = httpx.post(url, json={**body, "max_output_tokens": -1}, headers=headers, timeout=120)
    assert endless.status_code == 200 and endless.json()["max_output_tokens"] == -1, endless.text
    with httpx.stream("POST", url, json={**body, "stream": True}, headers=headers, timeout=120) as r:
        lines = [line for line in r.iter_lines() if line]
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert [line[6:] for line in lines if line.startswith("data: ")] == [  # compact, as OpenAI writes them
        json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in events]
    assert [line[7:] for line in lines if line.startswith("event: ")] == [e["type"] for e in events]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    kinds = [e["type"] for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.incomplete"]
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert deltas == events[-4]["text"] == events[-1]["response"]["output"][0]["content"][0]["text"]
    assert events[0]["response"]["id"] == events[-1]["response"]["id"]
    assert type(events[0]["response"]["created_at"]) is int
    # an earlier call and its output sent back as items, a function tool called: the chat route's tools underneath
    tools = [{"type": "function", "name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
    earlier = [{"role": "user", "content": "Weather in Paris?"},
               {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
               {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
               {"role": "user", "content": "And in Rome?"}]
    asked = {"model": "serve-test", "input": earlier, "tools": tools, "max_output_tokens": 40,
             "tool_choice": {"type": "function", "name": "get_weather"}}
    called = httpx.post(url, json=asked, headers=headers, timeout=120).json()
    [call] = called["output"]
    assert call["type"] == "function_call" and call["name"] == "get_weather" and call["call_id"].startswith("call_")
    assert json.loads(call["arguments"])["city"] and called["status"] == "completed"
    # a call cut by max_output_tokens: an incomplete function_call item, its arguments so far (it was an empty message)
    cut = httpx.post(url, json={**asked, "max_output_tokens": 22}, headers=headers, timeout=120).json()
    [part] = cut["output"]
    assert (part["type"], part["name"], part["status"], cut["status"]) == (
        "function_call", "get_weather", "incomplete", "incomplete"), cut
    prompt = httpx.post(f"{server.root}/apply-template", headers=headers, timeout=30, json={"tools": [
        {"type": "function", "function": {k: v for k, v in tools[0].items() if k != "type"}}], "messages": [
        earlier[0], {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}, earlier[3]]}).json()["prompt"]
    tokens = httpx.post(f"{server.root}/tokenize", json={"content": prompt, "parse_special": True}, headers=headers,
                        timeout=30).json()["tokens"]
    assert called["usage"]["input_tokens"] == len(tokens)  # the conversation the chat route makes of the items
    # what needs responses kept on the server, built-in tools, and mistakes: named in the client's words
    for extra, param, said in (({"previous_response_id": "resp_1"}, "previous_response_id", "keeps no responses"),
                               ({"tools": [{"type": "web_search"}]}, "tools", "tools[0] is a 'web_search' tool"),
                               ({"input": [{"role": "bot", "content": "hi"}]}, "input", "input[0].role is 'bot'"),
                               ({"max_output_tokens": 0}, "max_output_tokens", "'max_output_tokens' is 0"),
                               # none dropped without a word (a max_tokens of 1 let the reply run on, mirostat was
                               # ignored); the chat route's own fields go through to its checks (n), or are renamed
                               ({"max_tokens": 1}, "max_tokens", "/v1/responses takes 'max_output_tokens'"),
                               ({"mirostat": 2}, "mirostat", "'mirostat' is not supported"),
                               # a field OpenAI does not know: its 400 naming it (it was dropped)
                               ({"max_output_token": 5}, "max_output_token", "Unknown parameter: 'max_output_token'."),
                               ({"logprobs": True}, "logprobs", "'logprobs' is not served on /v1/responses"),
                               ({"n": 2}, "n", "Only n=1"),
                               ({"input": [{"type": "reasoning", "summary": []}]}, "input", "'input' holds no message"),
                               ({"input": [{"type": "function_call_output", "call_id": 7, "output": "x"}]}, "input",
                                "input[0].call_id must be a string"),
                               # the chat route's checks underneath, said in this API's fields (they named
                               # 'response_format' and tools[0].function.name, which the client never sent)
                               ({"text": {"format": {"type": "json_schema", "name": "a", "schema": {},
                                                     "strict": "yes"}}}, "text.format", "'text.format.strict'"),
                               ({"text": {"format": {"type": "json_schema", "name": "a", "schema": {
                                   "type": "no-such-type"}}}}, "text.format", "'text.format': "),
                               ({"tools": [{**tools[0], "name": "get weather"}]}, "tools", "tools[0].name must be"),
                               # and what it says of the messages made of the input items (it named 'messages')
                               ({"input": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "A"},
                                           {"role": "assistant", "content": "B"}]}, "input",
                                "The input ends with two assistant messages"),
                               ({"input": "word " * 1100}, "input", "The prompt is")):
        refused = httpx.post(url, json={**body, **extra}, headers=headers, timeout=30)
        assert refused.status_code == 400 and refused.json()["error"]["param"] == param, refused.text
        assert said in refused.json()["error"]["message"]
    kept = httpx.get(f"{url}/{whole['id']}", headers=headers, timeout=30)  # the openai client's responses.retrieve
    assert kept.status_code == 404 and "keeps no responses" in kept.json()["error"]["message"]
    count = httpx.post(f"{url}/input_tokens", json={"input": "hi"}, headers=headers, timeout=30)  # (input_tokens.count)
    assert count.status_code == 501 and "input tokens" in count.json()["error"]["message"], count.text
    assert count.headers["x-should-retry"] == "false"


def test_a_model_file_cut_short_while_it_serves_is_refused_with_a_503_not_a_bus_error(
        smollm2_path: Path, tmp_path: Path) -> None:
    """The model file truncated while serve had it mapped: the next request's decode read past
    its end and serve died with a bus error (exit 135), saying nothing, and the client got no
    HTTP status. Each request checks the file first: a 503 with the reason, the server still up.
    And /health, which said "ok" meanwhile (a load balancer kept sending people there), says
    503 "error" and why; the log says it once (at its default level it said nothing)."""
    import os
    import shutil

    from workstation.core.phrases import say
    from workstation.core.remote import answered_phrase
    from workstation.tui.i18n import Texts

    copy = tmp_path / "model.gguf"
    shutil.copyfile(smollm2_path, copy)
    with serve(write_profile(tmp_path, copy)) as srv:
        assert f"{copy} is read as the server answers: do not overwrite" in srv.log_text()
        body = {"messages": QUESTION, "max_tokens": 4}
        assert httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=120).status_code == 200
        os.truncate(copy, copy.stat().st_size // 2)
        refused = httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=120)
        assert refused.status_code == 503, refused.text
        said = refused.json()["error"]["message"]
        assert said.startswith("The model file model.gguf changed on disk since it was loaded"), said
        assert "restart" in said
        # its code: a desk PC says it in its own language (it had none, and said the server's English sentence)
        assert refused.json()["error"]["code"] == "model_file_changed"
        assert say([answered_phrase(srv.base_url, refused)], Texts("tr").get) == (
            f"{srv.base_url} adresindeki ofis sunucusu yanıt veremiyor: model dosyası yüklendiğinden beri diskte "
            "değişti; sunucuyu yöneten kişiden onu yeniden başlatmasını isteyin.")
        assert httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=120).status_code == 503
        health = httpx.get(f"{srv.root}/health", timeout=30)
        assert srv.proc.poll() is None and (health.status_code, health.json()["status"]) == (503, "error")
        assert health.json()["problems"] == ["the model file changed on disk since it was loaded: restart the server"]
        wait_until(lambda: "Every request is refused" in srv.log_text(), "the log's line", 10)
        assert re.findall(r"WARNING: +workstation: (.*)$", srv.log_text(), re.M) == [
            f"{said} Every request is refused (503) until then; /health says so."]


def test_the_log_has_colours_only_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve 2> serve.log` from a terminal wrote "[32mINFO[0m" into the file: uvicorn asked
    whether stdout was a terminal for the log it writes to stderr."""
    import logging.config
    import os

    from uvicorn.config import LOGGING_CONFIG

    from workstation.core.server.process import log_config

    leader, follower = os.openpty()
    with open(follower, "w") as terminal, open(tmp_path / "serve.log", "w") as log_file:
        monkeypatch.setattr(sys, "stdout", terminal)
        monkeypatch.setattr(sys, "stderr", log_file)
        monkeypatch.delenv("NO_COLOR", raising=False)
        config = log_config(LOGGING_CONFIG)
        assert config["formatters"]["access"]["use_colors"] is True  # (stdout: the terminal)
        logging.config.dictConfig(config)
        try:
            logging.getLogger("uvicorn.error").warning("a line")
            log_file.flush()
        finally:  # (the file closes here: no later line may go to it)
            for name in ("uvicorn", "uvicorn.access"):
                logging.getLogger(name).handlers.clear()
        monkeypatch.setenv("NO_COLOR", "1")
        assert log_config(LOGGING_CONFIG)["formatters"]["access"]["use_colors"] is False
    os.close(leader)
    written = (tmp_path / "serve.log").read_text()
    assert "WARNING" in written and "a line" in written and "\x1b[" not in written
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d WARNING", written)  # each line with its time


def test_a_streamed_reply_that_repeats_itself_says_why_it_stopped_and_what_is_the_reply(
        server: RunningServer, client: openai.OpenAI) -> None:
    """Up to two copies of the repeats stream before the loop is sure (core/loops.py): the last
    chunk said only ``finish_reason: "stop"``, as for a reply that ended by itself."""
    body = {"messages": [{"role": "user", "content": "Write the word ok five times."}], "max_tokens": 300,
            "temperature": 0.0, "repeat_penalty": 1.0, "seed": 1, "stream": True}
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body, headers=server.headers(),
                      timeout=120) as r:
        chunks = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
    streamed = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    last = chunks[-1]
    assert last["choices"][0]["finish_reason"] == "stop" and last["workstation_stop"] == "loop"
    kept = streamed[:last["loop_kept"]]
    assert kept.strip() and len(kept) < len(streamed) and kept.lower().count("five times") == 1
    whole = client.chat.completions.create(model="x", messages=body["messages"], max_tokens=300, temperature=0.0,
                                           seed=1, extra_body={"repeat_penalty": 1.0})
    assert whole.choices[0].message.content == kept  # (a reply not streamed comes without the repeats)
    # (said once, in the last chunk)
    assert all("workstation_stop" not in c and "loop_kept" not in c for c in chunks[:-1])
    # said of a reply not streamed too (it said only "stop", as a reply that ended by itself)
    assert whole.model_extra is not None
    assert (whole.model_extra["workstation_stop"], whole.model_extra["loop_kept"]) == ("loop", len(kept))


# a raw text the small model goes on with by writing its last line again and again (greedily)
RULES = "List of office rules:\n- Be on time.\n- Be on time.\n- Be on time.\n"


def test_a_chat_reply_cut_at_its_repeats_says_so_streamed_or_not_and_counts_the_tokens_generated(
        server: RunningServer) -> None:
    """A reply not streamed came cut at the loop with ``finish_reason: "stop"`` and nothing more;
    the stream's last chunk said ``workstation_stop``. Both say it now, with the same usage: the
    tokens generated, repeats included (what the model did)."""
    body = {"messages": [{"role": "user", "content": "Write the office rules."},
                         {"role": "assistant", "content": RULES}],  # (a reply begun: the model goes on)
            "max_tokens": 60, "temperature": 0.0, "repeat_penalty": 1.0}
    whole = httpx.post(f"{server.base_url}/chat/completions", json=body, headers=server.headers(), timeout=120).json()
    with httpx.stream("POST", f"{server.base_url}/chat/completions", headers=server.headers(), timeout=120,
                      json={**body, "stream": True, "stream_options": {"include_usage": True}}) as r:
        chunks = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: {")]
    text = whole["choices"][0]["message"]["content"]
    assert text == "- Be on time." and whole["choices"][0]["finish_reason"] == "stop"
    last = next(c for c in reversed(chunks) if c["choices"])
    said = {k: whole.get(k) for k in ("workstation_stop", "loop_kept")}
    assert said == {k: last.get(k) for k in ("workstation_stop", "loop_kept")} == {
        "workstation_stop": "loop", "loop_kept": len(text)}
    streamed = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert streamed[:last["loop_kept"]] == text and streamed.count("Be on time") > 2
    assert whole["usage"]["completion_tokens"] == chunks[-1]["usage"]["completion_tokens"]
    assert whole["usage"]["completion_tokens"] == whole["timings"]["predicted_n"] > 6  # (the repeats' tokens too)
    # a request that turns the watch off gets the repeats to its token limit
    off = httpx.post(f"{server.base_url}/chat/completions", json={**body, "stop_on_loop": False},
                     headers=server.headers(), timeout=120).json()
    assert off["choices"][0]["finish_reason"] == "length" and "workstation_stop" not in off


def test_a_completion_runs_on_through_repeats_unless_it_asks_for_the_loop_stop(
        server: RunningServer, client: openai.OpenAI) -> None:
    """/v1/completions continues a text, whose repeats are often what was asked (a list's pattern,
    a form's lines), as llama-server's does: it was cut at the second line, "stop", 30 tokens
    counted for 13 characters, while its stream sent all the copies."""
    done = client.completions.create(model="x", prompt=RULES, max_tokens=60, temperature=0,
                                     extra_body={"repeat_penalty": 1.0})
    assert done.choices[0].finish_reason == "length" and done.choices[0].text.count("- Be on time.") > 5
    assert done.model_extra is not None and "workstation_stop" not in done.model_extra
    streamed = client.completions.create(model="x", prompt=RULES, max_tokens=60, temperature=0, stream=True,
                                         extra_body={"repeat_penalty": 1.0})
    assert "".join(c.choices[0].text for c in streamed if c.choices) == done.choices[0].text
    # asked for: cut, and said so, as a chat reply is
    asked = client.completions.create(model="x", prompt=RULES, max_tokens=60, temperature=0,
                                      extra_body={"repeat_penalty": 1.0, "stop_on_loop": True})
    assert asked.choices[0].text == "- Be on time." and asked.choices[0].finish_reason == "stop"
    assert asked.model_extra is not None and asked.model_extra["workstation_stop"] == "loop"
    assert asked.model_extra["loop_kept"] == len("- Be on time.")
