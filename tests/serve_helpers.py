"""Start ``workstation serve`` as a real subprocess on a free loopback port (tests, bench)."""

from __future__ import annotations

import http.server
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

from workstation.core.server.process import wait_until_healthy

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class RunningServer:
    base_url: str  # http://127.0.0.1:PORT/v1
    root: str  # http://127.0.0.1:PORT
    api_key: str | None
    proc: subprocess.Popen[str]
    profile_path: Path
    log: list[str] = field(default_factory=list)  # the server's stderr, line by line

    def log_text(self) -> str:
        return "\n".join(self.log)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def metric(self, name: str) -> float:
        text = httpx.get(f"{self.root}/metrics", headers=self.headers(), timeout=30).text
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise KeyError(name)


def write_profile(directory: Path, model: str | Path, **overrides: object) -> Path:
    data: dict[str, object] = {
        "name": "serve-test",
        "model": str(model),
        "context": 1024,
        "threads": 1,
        "gpu_layers": 0,
        "sampling": {"temperature": 0.0, "max_tokens": 32, "seed": 1, "repeat_penalty": 1.0},
        "system_prompt": "",
    }
    data.update(overrides)
    path = directory / "serve-test.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@contextmanager
def serve(
    profile_path: Path,
    *args: str,
    api_key: str | None = None,
    start_timeout_s: float = 120,
    open_files: int | None = None,
    data: Path | None = None,
    terminal: bool | None = None,
) -> Iterator[RunningServer]:
    """``workstation serve`` on a free port; ``open_files`` lowers its RLIMIT_NOFILE. Its data
    folder (keys, usage, audit trail) is ``data``, else a fresh temporary folder. ``terminal``:
    True, started in a terminal of its own (a pseudo-terminal, its controlling one); False, in
    none (as a service manager starts it); None, in whatever the tests run in."""
    cmd = [sys.executable, "-m", "workstation.cli", "serve", "-p", str(profile_path), "--port", "0", *args]
    if api_key:
        cmd += ["--api-key", api_key]
    env = dict(os.environ)
    env.pop("WORKSTATION_API_KEY", None)
    own_data = None if data else tempfile.mkdtemp(prefix="ws-serve-data-")  # removed when it stops
    env["WORKSTATION_DATA"] = str(data or own_data)

    master, tty_name = (None, None)
    if terminal:
        master, follower = os.openpty()
        tty_name = os.ttyname(follower)
        os.close(follower)

    def before_exec() -> None:
        import resource

        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
        if tty_name is not None:  # a new session's leader takes the first terminal it opens as its own
            os.close(os.open(tty_name, os.O_RDWR))

    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        preexec_fn=before_exec if open_files is not None or tty_name is not None else None,
        start_new_session=terminal is not None,
    )
    log: list[str] = []
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
        if not match:
            rest = proc.stderr.read() if proc.poll() is not None else ""
            raise RuntimeError(f"serve did not start: {line}{rest}")
        root = f"http://127.0.0.1:{match.group(1)}"
        log.append(line.rstrip("\n"))
        stderr = proc.stderr

        def drain() -> None:  # never let the pipe fill; keep every line for the tests to read
            for text in stderr:
                log.append(text.rstrip("\n"))

        threading.Thread(target=drain, daemon=True).start()
        if not wait_until_healthy(root, proc, start_timeout_s):
            raise RuntimeError("serve did not answer /health")
        yield RunningServer(f"{root}/v1", root, api_key, proc, profile_path, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        if master is not None:
            os.close(master)
        if own_data is not None:
            shutil.rmtree(own_data, ignore_errors=True)


def served_module(name: str, *args: str):  # noqa: ANN201 - a pytest fixture
    """A module-scoped ``server`` fixture: ``workstation serve`` on SmolLM2 with ``args``."""
    import pytest

    @pytest.fixture(scope="module")
    def server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
        with serve(write_profile(tmp_path_factory.mktemp(name), smollm2_path), *args) as srv:
            yield srv

    return server


def openai_client(server: RunningServer):  # noqa: ANN201 - openai.OpenAI (imported here: optional)
    import openai

    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key or "none", max_retries=0, timeout=120)


def free_port() -> int:
    """A loopback port that nothing listens on, below the range the system hands out for port 0
    and for outgoing connections: one handed out by the system was free then, and the test's
    server started on it seconds later found it taken, as the other test processes' servers
    (``--port 0``) and connections draw from that range meanwhile."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # (Linux's default)
    # (not the random module's: pytest-randomly seeds it alike in every test process)
    for port in random.SystemRandom().sample(range(max(1024, low - 10000), low), 100):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # (that range all taken: as the system hands one out)
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DroppingServer:
    """An OpenAI-style server on 127.0.0.1 that lists a model, starts every reply and then drops
    the connection (as a server that crashes on a document does); ``stall`` instead sends
    the headers and then nothing, so the client's read times out."""

    def __init__(self, stall: bool = False) -> None:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
                if self.path.rstrip("/") != "/v1/models":
                    body = b"{}"
                    self.send_response(404)
                else:
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                owner.replies += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                if stall:
                    owner.release.wait(30)
                    return
                chunk = b'data: {"choices": [{"delta": {"content": "The"}}]}\n\n'
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
                self.close_connection = True  # gone mid-reply, no closing chunk

        self.replies = 0
        self.release = threading.Event()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class FileServer:
    """Files under ``root`` over HTTP on 127.0.0.1, with Range requests (each recorded in
    ``ranges``); ``cut`` hangs up after that many bytes of the next body, ``lying_range``
    answers a Range request with bytes from the start, ``claimed`` announces that size (a file
    larger than the disk) for the next body and hangs up after what there is."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ranges: list[str | None] = []
        self.cut: int | None = None  # send only this many bytes of the next body, then hang up
        self.lying_range = False  # answer a Range request with bytes from the start
        self.claimed: int | None = None  # the Content-Length the next body announces
        self.gate: threading.Event | None = None  # bodies wait for it to be set (a download under way)
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                path = owner.root / self.path.lstrip("/")
                if not path.is_file():
                    self.send_error(404)
                    return
                data = path.read_bytes()
                rng = self.headers.get("Range")
                owner.ranges.append(rng)
                start = 0
                if rng and rng.startswith("bytes="):
                    start = 0 if owner.lying_range else int(rng[6:].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                claimed, owner.claimed = owner.claimed, None
                self.send_header("Content-Length", str(claimed if claimed is not None else len(body)))
                self.end_headers()
                if claimed is not None:
                    self.close_connection = True
                if owner.cut is not None:
                    body, owner.cut = body[: owner.cut], None
                    self.close_connection = True
                if owner.gate is not None:
                    owner.gate.wait(30)
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        if self.gate is not None:
            self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()
