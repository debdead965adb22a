"""Attacks on ``workstation serve`` (issue 16), each performed for real against a keyless server
on loopback: the refusal is an OpenAI-shaped error object, nothing reaches the model, no
traceback reaches the server's log, and ``/health`` answers afterwards."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import wait_until
from serve_helpers import RunningServer, serve, write_profile

JSON = {"Content-Type": "application/json"}
ASK = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 1}
OPEN_FILES = 256  # the server's open-file limit: its connection cap follows from it (192)


@pytest.fixture(scope="module")
def server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    profile = write_profile(tmp_path_factory.mktemp("serve-sec"), smollm2_path)
    args = [
        "--parallel", "2", "--queue", "2",
        "--allowed-hosts", "office-pc", "--allowed-origins", "https://intranet.example",
        "--max-body", "65536", "--max-inflight-body", "150000", "--max-messages", "64",
        "--max-requests", "6", "--header-timeout", "1", "--body-timeout", "5", "--log-level", "info",
    ]
    with serve(profile, *args, open_files=OPEN_FILES) as srv:
        yield srv


def _port(srv: RunningServer) -> int:
    return int(srv.root.rsplit(":", 1)[1])


def _metric(srv: RunningServer, name: str) -> float:
    return srv.metric(name)


def _error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, object]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"].endswith(".")
    if code is not None:
        assert body["error"]["code"] == code
    return body["error"]


def _raw_error(data: bytes, status: int) -> dict[str, object]:
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), data[:200]
    assert b"connection: close" in head.lower()
    error = json.loads(body)["error"]
    assert {"message", "type", "param", "code"} <= set(error)  # (and more of what it means: a 413's limit_bytes)
    return error


def _still_serving(srv: RunningServer) -> None:
    assert httpx.get(f"{srv.root}/health", timeout=30).json()["status"] == "ok"
    log = srv.log_text()
    assert "Traceback" not in log and "Exception" not in log and "Error" not in log, log


def _connect(srv: RunningServer, first: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", _port(srv)), timeout=60)
    if first:
        sock.sendall(first)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _generated(srv: RunningServer) -> float:
    return _metric(srv, "workstation:requests_total")


# --- 1. web pages on the user's machine --------------------------------------------------------
def test_foreign_host_header_is_refused(server: RunningServer) -> None:
    """DNS rebinding: a page of attacker.example re-points its name at 127.0.0.1 and reads
    the answers; the Host header still says attacker.example."""
    before = _generated(server)
    for host in ("attacker.example", f"attacker.example:{_port(server)}", "127.0.0.1.attacker.example"):
        _error(httpx.get(f"{server.base_url}/models", headers={"Host": host}), 403, "host_not_allowed")
        r = httpx.post(f"{server.base_url}/chat/completions", json=ASK, headers={"Host": host})
        _error(r, 403, "host_not_allowed")
    assert _generated(server) == before
    port = _port(server)
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "app.localhost", "office-pc",
                 f"OFFICE-PC:{port}", "192.168.1.20:8088"):
        assert httpx.get(f"{server.base_url}/models", headers={"Host": host}).status_code == 200, host
    # this PC's own name is for a server others can reach (see below), not one on loopback:
    # a name on the network (vm.local) must not open a keyless local server to the network
    own = socket.gethostname().lower().split(".")[0]
    for host in (f"{own}:{port}", f"{own}.local"):
        _error(httpx.get(f"{server.base_url}/models", headers={"Host": host}), 403, "host_not_allowed")
    _still_serving(server)


def test_cross_site_simple_post_is_refused(server: RunningServer) -> None:
    """A page may POST text/plain or a form to any origin without a CORS preflight."""
    before = _generated(server)
    body = json.dumps(ASK).encode()
    url = f"{server.base_url}/chat/completions"
    r = httpx.post(url, content=body, headers={"Content-Type": "text/plain", "Origin": "https://evil.example"})
    _error(r, 403, "origin_not_allowed")
    assert "access-control-allow-origin" not in r.headers
    _error(httpx.post(url, content=body, headers={"Content-Type": "text/plain"}), 415, "unsupported_media_type")
    r = httpx.post(url, content=b"a=1", headers={"Content-Type": "application/x-www-form-urlencoded"})
    _error(r, 415)
    # Ollama's routes read JSON whatever its Content-Type (as Ollama does): a page's is refused by its Origin
    r = httpx.post(f"{server.root}/api/chat", content=body, headers={"Content-Type": "text/plain",
                                                                    "Origin": "https://evil.example"})
    assert r.status_code == 403 and "access-control-allow-origin" not in r.headers, r.text
    r = httpx.post(url, content=body, headers={**JSON, "Origin": "null"})  # sandboxed frames, file:// pages
    _error(r, 403, "origin_not_allowed")
    assert _generated(server) == before
    _still_serving(server)


def test_cors_preflight_answers_allowed_origins_only(server: RunningServer) -> None:
    url = f"{server.base_url}/chat/completions"
    ask = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    for origin in ("https://intranet.example", "http://localhost:5173", "http://127.0.0.1:3000"):
        r = httpx.options(url, headers={**ask, "Origin": origin})
        assert r.status_code == 204, (origin, r.text)
        assert r.headers["access-control-allow-origin"] == origin
        assert "POST" in r.headers["access-control-allow-methods"]
        assert "content-type" in r.headers["access-control-allow-headers"].lower()
        assert "Origin" in r.headers["vary"]
    # the openai JS client's own headers (x-stainless-*) may be sent too: the browser refused them
    sdk = {"Access-Control-Request-Method": "POST", "Origin": "http://localhost:5173",
           "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os, x-stainless-lang, "
                                             "openai-organization, bad header, " + "x" * 70}
    r = httpx.options(url, headers=sdk)
    allowed = [h.strip().lower() for h in r.headers["access-control-allow-headers"].split(",")]
    assert r.status_code == 204 and allowed == ["authorization", "content-type", "x-api-key", "x-stainless-os",
                                                "x-stainless-lang", "openai-organization"]
    assert "Access-Control-Request-Headers" in r.headers["vary"]
    r = httpx.options(url, headers={**ask, "Origin": "https://evil.example"})
    _error(r, 403, "origin_not_allowed")
    assert "access-control-allow-origin" not in r.headers
    r = httpx.post(f"{server.root}/tokenize", json={"content": "hi"}, headers={"Origin": "https://intranet.example"})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://intranet.example"
    _still_serving(server)


def test_models_do_not_reveal_the_file_path(server: RunningServer, smollm2_path: Path) -> None:
    text = httpx.get(f"{server.base_url}/models").text
    assert json.loads(text)["data"][0]["id"] == "serve-test"
    assert str(smollm2_path.parent) not in text and smollm2_path.name not in text and ".gguf" not in text


# --- 3. malformed JSON ---------------------------------------------------------------------------
def test_deep_nesting_gets_400(server: RunningServer) -> None:
    depth = 30_000  # json.loads raised RecursionError: a 500 and a long traceback
    for key in ("messages", "prompt", "metadata"):
        body = b'{"%s": ' % key.encode() + b"[" * depth + b"]" * depth + b"}"
        r = httpx.post(f"{server.base_url}/chat/completions", content=body, headers=JSON)
        assert "nests JSON more deeply" in str(_error(r, 400)["message"])
    _still_serving(server)


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/chat/completions", b'{"messages": [{"role": "user", "content": "hi \\ud800"}], "max_tokens": 1}', "messages"),
        ("/chat/completions",
         b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "\\udfff"}]}]}', "messages"),
        ("/completions", b'{"prompt": "The \\udc00 capital", "max_tokens": 1}', "prompt"),
        # the model name used to fail only when the reply was written, after generating
        ("/chat/completions", b'{"model": "x\\ud83e", "messages": [{"role": "user", "content": "hi"}]}', "model"),
        ("/chat/completions", b'{"stop": ["\\ud800"], "messages": [{"role": "user", "content": "hi"}]}', "stop"),
    ],
)
def test_lone_surrogate_gets_400_before_generating(server: RunningServer, path: str, body: bytes, param: str) -> None:
    before = _generated(server)
    error = _error(httpx.post(f"{server.base_url}{path}", content=body, headers=JSON), 400)
    assert error["param"] == param and "surrogate" in str(error["message"])
    assert _generated(server) == before
    _still_serving(server)


def test_a_surrogate_pair_is_valid_text(server: RunningServer) -> None:
    body = b'{"messages": [{"role": "user", "content": "a llama: \\ud83e\\udd99"}], "max_tokens": 1}'
    r = httpx.post(f"{server.base_url}/chat/completions", content=body, headers=JSON, timeout=120)
    assert r.status_code == 200, r.text


def test_too_many_messages_or_parts_get_400(server: RunningServer) -> None:
    """120,000 empty messages cost 2 s of CPU per request before the cap."""
    before = _generated(server)
    many = {"messages": [{"role": "user", "content": ""}] * 65}
    error = _error(httpx.post(f"{server.base_url}/chat/completions", json=many), 400)
    assert "65 messages" in str(error["message"]) and "64" in str(error["message"])
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": ""}] * 65}]}
    _error(httpx.post(f"{server.base_url}/chat/completions", json=parts), 400)
    _error(httpx.post(f"{server.root}/apply-template", json=many), 400)
    assert _generated(server) == before
    _still_serving(server)


# --- 2. resource exhaustion ----------------------------------------------------------------------
def test_half_sent_headers_get_408_and_are_closed(server: RunningServer) -> None:
    with _connect(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty") as sock:
        error = _raw_error(_read_all(sock), 408)  # _read_all returns once the server closes
    assert error["code"] == "request_timeout"
    # a kept-alive connection gets the same deadline for its next request's headers
    with _connect(server, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") as sock:
        first = b""
        while not first.endswith(b"}"):  # the whole first answer: headers, then the JSON body
            first += sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /health HTTP/1.1\r\nHo")
        _raw_error(_read_all(sock), 408)
    _still_serving(server)


def test_slow_body_gets_408(server: RunningServer) -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    with _connect(server, head + b"Content-Length: 1000\r\n\r\n" + b'{"messages": ') as sock:
        data = _read_all(sock)
    assert data.startswith(b"HTTP/1.1 408")
    assert json.loads(data.partition(b"\r\n\r\n")[2])["error"]["code"] == "request_timeout"
    wait_until(lambda: _metric(server, "workstation:body_bytes_in_flight") == 0, "the body's bytes released", 60)
    _still_serving(server)


def test_connection_flood_under_a_low_file_limit(server: RunningServer) -> None:
    """More half-open connections than the server has file descriptors: the newest ones push
    out the oldest idle ones (503 with an error object), so /health still answers."""
    socks = []
    answers: list[bytes] = []
    try:
        for _ in range(OPEN_FILES + 150):
            socks.append(_connect(server, b"GET /health HTTP/1.1\r\n"))
        for _ in range(3):
            assert httpx.get(f"{server.root}/health", timeout=30).json()["status"] == "ok"
        for s in socks:
            s.settimeout(0.05)
            with contextlib.suppress(OSError):  # still open, or reset
                answers.append(s.recv(65536))
    finally:
        for s in socks:
            s.close()
    pushed_out = [a for a in answers if a.startswith(b"HTTP/1.1 503")]
    assert len(pushed_out) > 100
    assert _raw_error(pushed_out[0], 503)["code"] == "server_busy"
    _still_serving(server)


def test_request_cap_answers_503_and_health_still_answers(server: RunningServer) -> None:
    head = b"POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    socks = [_connect(server, head + b'{"content"') for _ in range(6)]  # each holds a request open
    try:
        wait_until(lambda: _metric(server, "workstation:http_requests_in_flight") == 6, "6 requests in flight", 60)
        r = httpx.post(f"{server.root}/tokenize", json={"content": "hi"})
        _error(r, 503, "server_busy")
        assert r.headers["retry-after"] == "1"
        assert httpx.get(f"{server.root}/health").status_code == 200
    finally:
        for s in socks:
            s.close()
    wait_until(lambda: _metric(server, "workstation:http_requests_in_flight") == 0, "the requests ended", 60)
    assert httpx.post(f"{server.root}/tokenize", json={"content": "hi"}).status_code == 200
    _still_serving(server)


def test_inflight_body_bytes_are_capped(server: RunningServer) -> None:
    """200 slow 3 MB bodies held 1.1 GB; now bodies being read share one budget (150000 here)."""

    def post(length: int, sent: bytes) -> socket.socket:
        head = (
            b"POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % length
        )
        return _connect(server, head + sent)

    held = [post(60_000, b'{"content": "'), post(60_000, b'{"content": "')]
    try:
        wait_until(lambda: _metric(server, "workstation:body_bytes_in_flight") == 120_000, "two bodies held", 60)
        with post(60_000, b'{"content": "') as third:
            error = _raw_error(_read_all(third), 503)
        assert error["code"] == "server_busy"
        small = json.dumps({"content": "x" + " " * 19_000}).encode()  # fits beside the two
        r = httpx.post(f"{server.root}/tokenize", content=small, headers=JSON)
        assert r.status_code == 200 and r.json()["tokens"]
    finally:
        for s in held:
            s.close()
    wait_until(lambda: _metric(server, "workstation:body_bytes_in_flight") == 0, "the bodies released", 60)
    big = json.dumps({"content": "y" * 60_000}).encode()
    assert httpx.post(f"{server.root}/tokenize", content=big, headers=JSON, timeout=60).status_code == 200
    _still_serving(server)


def test_headers_too_long_or_not_http_get_400(server: RunningServer) -> None:
    long_header = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 20_000  # and still going
    for data in (long_header, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n"):
        with _connect(server, data) as sock:
            assert _raw_error(_read_all(sock), 400)["code"] == "bad_http"
    assert httpx.get(f"{server.root}/health").status_code == 200
    assert "Traceback" not in server.log_text()


def test_oversized_declared_body_is_refused_before_reading(server: RunningServer) -> None:
    head = b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    with _connect(server, head + b"Content-Length: 9999999999\r\n\r\n{") as sock:
        error = _raw_error(_read_all(sock), 413)
    assert "65536" in str(error["message"])
    assert (error["code"], error["limit_bytes"]) == ("request_too_large", 65536)
    _still_serving(server)


def test_a_server_on_every_address_names_the_ones_colleagues_can_type() -> None:
    """`serve --host 0.0.0.0` said "on http://0.0.0.0:8088/v1", no address to hand out."""
    import ipaddress

    from workstation.cli import build_parser
    from workstation.commands.serve import addresses_for, server_options
    from workstation.core.server.guard import host_allowed

    assert addresses_for(["127.0.0.1"]) == [] and addresses_for(["192.168.1.20"]) == []
    # bound off loopback (a key is needed there), the PC's own name is answered for: it was 403
    own = socket.gethostname().lower().split(".")[0]
    for hosts, allowed in ((["--host", "0.0.0.0"], True), (["--host", "127.0.0.1,::1"], False), ([], False)):
        args = build_parser().parse_args(["serve", *hosts, "--allowed-hosts", "office-pc"])
        names = server_options(args, "key").allowed_hosts
        assert "office-pc" in names and host_allowed(f"{own}:8088", names) is allowed, (hosts, names)
        assert host_allowed(f"{own}.local", names) is allowed and not host_allowed("attacker.example", names)
    found = addresses_for(["0.0.0.0"])
    assert found[0] == socket.gethostname()
    for address in found[1:]:
        ip = ipaddress.ip_address(address)
        assert ip.version == 4 and not ip.is_loopback, address


def test_a_name_under_localhost_to_bind_to_still_needs_a_key() -> None:
    """`serve --host dev.localhost` took no key: /etc/hosts may point such a name at a LAN
    address. A browser's Host header under localhost is still this machine's (the guard)."""
    from workstation.core.addresses import is_loopback
    from workstation.core.server import ServeError, check_host

    with pytest.raises(ServeError):
        check_host("dev.localhost", None)
    check_host("localhost", None)
    check_host("[::1]", None)
    assert is_loopback("app.localhost") and not is_loopback("app.localhost", names_under_localhost=False)


def test_a_body_over_the_limit_on_a_kept_alive_connection_gets_its_413(server: RunningServer) -> None:
    """The server answered 413 without reading the body and closed; on a kept-alive connection
    (the openai client's) the client, still sending, saw "peer closed connection" instead. The
    rest of the body is now read and dropped first, declared or chunked."""
    big = json.dumps({"prompt": "x" * (5 * 2**20)}).encode()  # over the test server's 65,536

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(big), 65536):
            yield big[i:i + 65536]

    for body in (big, big, chunks(), chunks()):
        with httpx.Client(timeout=60, headers={**server.headers(), **JSON}) as client:
            assert client.get(f"{server.root}/health").status_code == 200  # the connection is kept
            r = client.post(f"{server.base_url}/completions", content=body)
            assert r.status_code == 413 and "65536" in r.json()["error"]["message"]
    # the piece that goes over the limit is the body's last (its end in the same packet): reading
    # on found Starlette's stream used up, and the answer was a 500
    head = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    with _connect(server, head + b"%x\r\n" % 60_000 + b"x" * 60_000 + b"\r\n") as sock:
        time.sleep(0.5)  # (read by the server before the rest comes)
        sock.sendall(b"%x\r\n" % 10_000 + b"y" * 10_000 + b"\r\n0\r\n\r\n")
        error = _raw_error(_read_all(sock), 413)
    assert "65536" in str(error["message"])
    _still_serving(server)


def test_the_log_has_a_line_for_every_request_but_a_probe(server: RunningServer) -> None:
    """--log-level info wrote a line for generations only: a browser tool's 403, a 404 or a
    401 on /v1/models left the operator nothing to go on. /health and /metrics answered 200
    stay out (a monitor asks every few seconds); a generation's line is its own, once."""
    import re

    assert httpx.get(f"{server.root}/no-such-route-for-the-log").status_code == 404
    # a path with a line break in it (decoded by uvicorn) wrote a line of its choosing: kept escaped
    forged = "/forged%0a2026-12-05%2013:00:00%20INFO:%20%20%20%20%20alice%2010.0.0.9%20chat%20200%205000+900%20tokens"
    assert httpx.get(f"{server.root}{forged}").status_code == 404
    # an address a proxy passed on as the client wrote it: an escape sequence reached the terminal
    assert httpx.get(f"{server.root}/no-such-xff", headers={"X-Forwarded-For": "\x1b[31mRED"}).status_code == 404
    _error(httpx.get(f"{server.base_url}/models", headers={"Origin": "https://log.example"}), 403,
           "origin_not_allowed")
    assert httpx.get(f"{server.root}/health").status_code == 200
    assert httpx.post(f"{server.base_url}/chat/completions", json=ASK, timeout=120).status_code == 200
    for _ in range(3000):  # (its line is written as the answer goes)
        log = server.log_text()
        if "/no-such-route-for-the-log" in log and " chat 200 " in log and "/forged" in log and "/no-such-xff" in log:
            break
        time.sleep(0.01)
    line = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d INFO: +"
    # (a 404 names who asked: the key is checked before it; a 403 for the origin comes before any key)
    assert re.search(line + r"\(shared\) 127\.0\.0\.1 GET /no-such-route-for-the-log 404 in \d+\.\d\d s$", log, re.M), log
    assert re.search(line + r"- 127\.0\.0\.1 GET /v1/models 403 in ", log, re.M), log
    assert " chat 200 " in log and "POST /v1/chat/completions 200" not in log  # the accounts' line alone
    assert "GET /health 200" not in log
    assert "GET /forged%0a2026-12-05%2013:00:00%20INFO:" in log and "alice 10.0.0.9" not in log, log
    assert "(shared) \\x1b[31mRED GET /no-such-xff 404 in " in log and "\x1b" not in log, log


def test_a_persons_key_holds_a_quarter_of_the_bodies_read_at_once() -> None:
    """Eight bodies dribbled a byte every 5 s from one key held every other person's POST at 503
    ("reading as many request bodies as it can hold") for a minute: one key now holds a quarter
    of what is read at once (or one body of the largest size), the shared key as before."""
    from workstation.core.server.guard import InflightBodies

    bodies = InflightBodies(1000, max_body=100)
    assert bodies.take(200, "bob") and bodies.take(50, "bob") and not bodies.take(1, "bob")  # his quarter
    assert bodies.take(250, "carol")  # another person's is hers
    assert bodies.take(500) and not bodies.take(1)  # the shared key's: the whole rest, as before
    bodies.give(200, "bob")
    assert bodies.used == 800 and bodies.take(150, "bob") and bodies.by_person["bob"] == 200
    bodies.give(200, "bob")
    bodies.give(250, "carol")
    bodies.give(500)
    assert bodies.used == 0 and bodies.by_person == {}
    assert InflightBodies(1000, max_body=600).share == 600  # one body of the largest size always fits


def test_a_bracketed_address_with_more_after_it_is_no_loopback_name() -> None:
    """"[::1].evil.com" (Host) and "http://[::1]x" (Origin) were read as ::1, a loopback name."""
    from workstation.core.server.guard import host_allowed, origin_allowed

    assert host_allowed("[::1]:8088", []) and host_allowed("[::1]", [])
    assert not host_allowed("[::1].evil.com", []) and not host_allowed("[::1]x", [])
    assert origin_allowed("http://[::1]:3000", []) and origin_allowed("http://localhost:3000", [])
    assert not origin_allowed("http://[::1]x", []) and not origin_allowed("http://[::1].evil.com", [])
