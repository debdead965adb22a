"""``backend: openai`` profiles do everything a local one does: chat, summaries, task sets.

Against ``workstation serve`` (exact token counts through its ``/apply-template`` and
``/tokenize``), against a server that is not ours (llama-cpp-python's own ``llama_cpp.server``:
no ``/tokenize``, so a stated conservative estimate), and against a recording HTTP server that
shows exactly what the chat sends when the TUI serves the API (Ctrl+G).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import make_profile
from docmaker import honeybee_text
from serve_helpers import RunningServer, free_port, serve, write_profile
from tui_helpers import f6_state, summarize_in_f6

from workstation.core.documents import Document
from workstation.core.errors import EX_TEMPFAIL, EngineError
from workstation.core.evaluate import EXAMPLE_TASKS, TaskSet, load_task_set, run_tasks
from workstation.core.events import TokenDelta, TurnFinished
from workstation.core.profile_check import profile_from_dict
from workstation.core.profiles import Constraints, Profile
from workstation.core.remote import RemoteEngine, client_profile, estimate_tokens
from workstation.core.server.process import wait_until_healthy
from workstation.core.summarize import summarize_document
from workstation.core.summary_options import SummarizeOptions

HELLO = [{"role": "user", "content": "Name three colours of the rainbow."}]
OURS_MOST = 320  # the prompt tokens ``ours`` reads a request (serve --max-prompt-tokens)


def remote_profile(base_url: str, context: int = 1024, parallel: int = 2) -> Profile:
    return profile_from_dict(
        {
            "name": "remote-backend-test",
            "backend": "openai",
            "context": context,
            "parallel": parallel,
            "remote": {"base_url": base_url, "timeout_s": 300},
            "sampling": {"temperature": 0.0, "max_tokens": 24, "repeat_penalty": 1.0, "seed": 1},
        },
        "<remote backend test>",
    )


def document() -> Document:
    text = honeybee_text(2)  # two or three parts at 200 tokens
    return Document(source="honeybees.txt", kind="text", text=text)


def _summarize(engine: RemoteEngine, profile: Profile, on_progress: Any = None) -> Any:
    return summarize_document(
        engine, document(), profile, options=SummarizeOptions(map_tokens=24, reduce_tokens=32, chunk_tokens=200),
        on_progress=on_progress,
    )


def _english_tasks() -> TaskSet:
    """The example set's English half: every kind of task and check once (the Turkish half
    mirrors it), at half the decode time on a slow machine."""
    tasks = load_task_set(EXAMPLE_TASKS)
    english = dataclasses.replace(tasks, tasks=[t for t in tasks.tasks if t.id.startswith("en-")])
    assert len(english.tasks) == 6
    return english


# --- workstation serve --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ours(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    path = write_profile(tmp_path_factory.mktemp("remote-backends"), smollm2_path)
    # a prompt limit well below its context (1,024): a desk PC's summary parts fit it
    with serve(path, "--parallel", "2", "--max-prompt-tokens", str(OURS_MOST)) as srv:
        yield srv


def test_summary_through_workstation_serve_counts_tokens_exactly(ours: RunningServer) -> None:
    from workstation.core.metrics import TurnMetrics, turn_record
    from workstation.core.store import ConversationStore
    from workstation.tui.i18n import Texts

    profile = remote_profile(ours.base_url)
    # a reply the app kept from this desk PC's profile: how fast its office server writes
    store = ConversationStore()
    try:
        conv = store.new("Bees", profile.ref)
        replied = TurnMetrics(predicted_n=64, predicted_ms=1600.0, stop_reason="eos")
        replied.finish_rates()
        store.add_message(conv.id, "assistant", "Bees make honey.", turn_record(replied, profile.ref, profile.name,
                                                                                served_model="smollm2"))
    finally:
        store.close()
    seen: list[Any] = []
    with RemoteEngine(profile) as engine:
        # cut by the server's prompt limit, not the profile's context alone: a desk PC cut the
        # document into parts of up to 1,000 tokens, each refused ("reads at most 320 tokens")
        result = summarize_document(engine, document(), profile, options=SummarizeOptions(map_tokens=24, reduce_tokens=32),
                                    on_progress=seen.append)
        assert engine.exact_counts is True and engine.info().max_prompt_tokens == OURS_MOST

        def lowered(p: Any) -> None:  # the server's limit lower than when the parts were cut (restarted since)
            if p.stage == "map" and not p.done:
                engine.meta["max_prompt_tokens"] = 100

        with pytest.raises(EngineError) as over:
            summarize_document(engine, document(), profile, options=SummarizeOptions(map_tokens=24, reduce_tokens=32),
                               on_progress=lowered)
        engine.meta["max_prompt_tokens"] = OURS_MOST
    # said as the summary's own problem: it ended "Shorten it, or summarize the document (F6 in the app, …)"
    said = str(over.value)
    assert said.startswith("A step of the summary (a part of the document, or their summaries put together) is ") \
        and "; the server reads at most 100 tokens a request, so the summary stopped there." in said \
        and "F6" not in said and "Shorten" not in said, said
    assert Texts("tr").error(over.value).startswith("Özetin bir adımı"), Texts("tr").error(over.value)
    assert len(result.chunks) > 1 and not result.cancelled
    assert all(c.prompt_tokens <= OURS_MOST for c in result.chunks) and all(s.prompt_tokens <= OURS_MOST
                                                                         for s in result.reduce_steps)
    # the time left before a part has ended, by that speed (it said "…" until then on a desk PC)
    assert any(p.eta_s is not None for p in seen if p.stage == "map" and not p.chunks_done), seen
    # a part's summary said as it streams in, before the part ends (a desk PC's showed nothing)
    assert any(p.stage == "map" and p.chunks_done == 0 and p.part_written > 0 for p in seen), seen
    assert all(c.summary for c in result.chunks) and result.overall
    for c in result.chunks:
        m = c.metrics
        assert m is not None
        # the server's usage counts the same prompt the summarizer measured before sending it
        assert m.prompt_n + m.cache_n == c.prompt_tokens
    assert result.totals["cache_n"] > 0  # the chunks' shared instruction came from the KV cache
    # the office server runs SmolLM2 135M: the desk PC's summary warns of it as a local one does
    assert "is a very small model (135M parameters)" in result.summary
    # named as the model it is (it named the server's profile: "serve-test is a very small model")
    assert "smollm2-135m-instruct" in result.summary.split("is a very small model")[0].lower()


def test_summarize_on_a_desk_pc_points_to_the_servers_model(ours: RunningServer, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A desk PC's summary by a very small model advised "a larger one ('./run.sh models list')":
    the model is the server's to change."""
    import yaml

    from workstation.cli import main

    desk, doc = tmp_path / "desk.yaml", tmp_path / "memo.txt"
    desk.write_text(yaml.safe_dump({"name": "desk", "backend": "openai", "remote": {"base_url": ours.base_url},
                                    "sampling": {"temperature": 0.0, "max_tokens": 12}}), encoding="utf-8")
    doc.write_text("The office buys paper and pens this week; Ayla orders them on Monday.", encoding="utf-8")
    assert main(["summarize", str(doc), "-p", str(desk), "-o", str(tmp_path / "memo.md")]) == 0
    err = capsys.readouterr().err
    assert "a larger one on the server (ask whoever runs it) summarizes more faithfully" in err and "models list" not in err


def test_task_set_through_workstation_serve(ours: RunningServer, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with RemoteEngine(remote_profile(ours.base_url)) as engine:
        score = run_tasks(engine, _english_tasks())
    assert len(score.results) == 6 and all(r.predicted_n > 0 for r in score.results)
    # `eval` on a desk profile names the server's model and host (it said "v1", the URL's end),
    # and tasks without a language are counted under "other", not an unnamed "-"
    import yaml

    from workstation.cli import main

    desk, tasks = tmp_path / "desk.yaml", tmp_path / "tasks.yaml"
    desk.write_text(yaml.safe_dump({"name": "desk", "backend": "openai", "remote": {"base_url": ours.base_url},
                                    "sampling": {"temperature": 0.0, "max_tokens": 8}}), encoding="utf-8")
    tasks.write_text(yaml.safe_dump({"name": "two", "tasks": [
        {"prompt": "What is the capital of France? One word.", "match": "contains", "answer": "Paris"},
        {"lang": "en", "prompt": "Say yes.", "match": "contains", "answer": "yes"},
    ]}), encoding="utf-8")
    assert main(["eval", "-p", str(desk), "--tasks", str(tasks)]) in (0, 1)
    out = capsys.readouterr().out
    host = ours.base_url.split("//", 1)[1].split("/", 1)[0]
    assert f"@{host}" in out and " v1 " not in out, out
    assert " other |  en |" in out.splitlines()[0], out


# --- a server that is not ours ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def foreign(smollm2_path: Path) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path), "--n_ctx", "1024",
           "--n_threads", "1", "--host", "127.0.0.1", "--port", str(port), "--verbose", "False"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        if not wait_until_healthy(base, proc, 120, path="/models"):  # it has no /health
            pytest.fail("llama_cpp.server did not start")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_summary_through_a_foreign_server_uses_the_stated_estimate(foreign: str, smollm2_path: Path) -> None:
    """A server without /tokenize gets prompts measured by the stated estimate, which must be
    conservative: each part's prompt, counted by the model's own tokenizer, fits its estimate
    (else a part overflows the foreign server's context). The server says no usage in a stream,
    so the count is the test's own, with the model file the server runs."""
    from workstation.core.engine import Engine
    from workstation.core.engine_api import with_system_prompt

    profile = remote_profile(foreign, parallel=1)
    sent: list[list[dict[str, str]]] = []  # every conversation the summary asked the server
    with RemoteEngine(profile) as engine:
        assert engine.count_prompt(HELLO) == estimate_tokens(with_system_prompt(profile, HELLO))
        assert engine.exact_counts is False  # it has no /tokenize
        stream_chat, run_many = engine.stream_chat, engine.run_many

        def streamed(messages: list[dict[str, str]], *args: Any, **kwargs: Any) -> Any:
            sent.append(with_system_prompt(profile, messages))
            return stream_chat(messages, *args, **kwargs)

        def many(conversations: list[list[dict[str, str]]], *args: Any, **kwargs: Any) -> Any:
            sent.extend(with_system_prompt(profile, c) for c in conversations)
            return run_many(conversations, *args, **kwargs)

        engine.stream_chat, engine.run_many = streamed, many  # type: ignore[method-assign]
        # two parts (a part's words, and the summary's, as few as show the estimate at work: this
        # server reads on one thread: four parts and 24-token answers took it 20 s of CPU)
        bees = Document(source="honeybees.txt", kind="text", text=honeybee_text(1))
        result = summarize_document(engine, bees, profile,
                                    options=SummarizeOptions(map_tokens=8, reduce_tokens=8, chunk_tokens=200))
    assert len(result.chunks) > 1 and not result.cancelled
    assert all(c.summary for c in result.chunks) and result.overall
    # (llama_cpp.server streams no usage: what it read is not known from its replies)
    assert all(c.metrics is not None and c.metrics.prompt_n + c.metrics.cache_n == 0 for c in result.chunks)
    with Engine(make_profile(model=str(smollm2_path), threads=1, context=1024)) as tokenizer:
        for c in result.chunks:
            words = bees.text[c.start:c.end].strip()[:60]
            asked = [m for m in sent if words in m[-1]["content"] and estimate_tokens(m) == c.prompt_tokens]
            assert asked, (c.index, words)
            for messages in asked:
                real = tokenizer.count_prompt(messages)  # (the system message given: none added)
                assert 0 < real <= c.prompt_tokens, (c.index, real, c.prompt_tokens)


def test_task_set_through_a_foreign_server(foreign: str) -> None:
    with RemoteEngine(remote_profile(foreign, parallel=1)) as engine:
        score = run_tasks(engine, _english_tasks())
    assert len(score.results) == 6 and all(r.predicted_n > 0 for r in score.results)


# --- what the chat sends while the TUI serves the API (Ctrl+G) ---------------------------------------
class _Recorder(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []
    note = b""  # said before the reply (workstation serve's stopping_note: it began to stop)

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, data: object) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._json(200, {"object": "list", "data": [{"id": "recorder", "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": "no such route"}})
            return
        _Recorder.bodies.append(body)
        chunk = {"choices": [{"index": 0, "delta": {"content": "Red."}, "finish_reason": "stop"}]}
        raw = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
        if _Recorder.note:  # the note before a part that goes on (with the last part, the reply is whole)
            raw = (_Recorder.note + b'data: {"choices": [{"index": 0, "delta": {"content": "Red"}}]}\n\n'
                   + raw.replace(b'"Red."', b'"."'))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class _DayRunsOut(_Recorder):
    """A server whose key has tokens for one request: the first is answered, the rest refused
    as workstation serve refuses a prompt over what the key has left today."""

    answered = 0
    stopping = False  # as workstation serve's stop cuts a reply off: an error event in the stream
    lock = threading.Lock()

    def do_POST(self) -> None:  # noqa: N802
        with _DayRunsOut.lock:
            first = _DayRunsOut.answered == 0 or not self.path.endswith("/chat/completions")
            _DayRunsOut.answered += self.path.endswith("/chat/completions")
        if first:
            super().do_POST()
            return
        self.rfile.read(int(self.headers["Content-Length"]))
        if _DayRunsOut.stopping:
            event = {"error": {"message": "The server is shutting down.", "code": "shutting_down"}}
            body = f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        raw = json.dumps({"error": {"message": "over", "type": "insufficient_quota", "code": "insufficient_quota"}})
        self.send_response(429)
        for name, value in (("Content-Type", "application/json"), ("Content-Length", str(len(raw))),
                            ("Retry-After", "3600"), ("X-RateLimit-Limit-Tokens", "3000"),
                            ("X-RateLimit-Remaining-Tokens", "196")):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw.encode())


def _desk_of(server: ThreadingHTTPServer, tmp_path: Path) -> Path:
    """A desk PC's profile file for ``server`` (greedy, 24 tokens a reply, a 1,024-token context)."""
    import yaml

    desk = tmp_path / "desk.yaml"
    desk.write_text(yaml.safe_dump({
        "name": "desk", "backend": "openai", "context": 1024, "parallel": 1,
        "remote": {"base_url": f"http://127.0.0.1:{server.server_address[1]}/v1"},
        "sampling": {"temperature": 0.0, "max_tokens": 24}}), encoding="utf-8")
    return desk


def test_a_summary_the_server_stops_keeps_the_parts_it_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The key's day ran out after part 1 of 2: summarize wrote nothing and exited, the part
    paid for lost (F6 the same, and Ctrl+R began at part 1). The parts finished are written,
    as after Ctrl-C, and the error says what the summary covers."""
    from workstation.cli import main

    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    _DayRunsOut.answered = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DayRunsOut)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        desk = _desk_of(server, tmp_path)
        doc = tmp_path / "hives.txt"
        doc.write_text(honeybee_text(8), encoding="utf-8")
        out = tmp_path / "summary.md"
        # exit status 75, "try again later", as batch says for the same cause (it was 1, as for a
        # document that cannot be read)
        assert main(["summarize", "-p", str(desk), str(doc), "-o", str(out), "--quiet"]) == EX_TEMPFAIL == 75
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert "your key has left today" in err and "covers only the 1 of " in err, err
    assert _DayRunsOut.answered == 2  # the parts after the refused one were not sent (each would be refused)
    assert "Red." in out.read_text(encoding="utf-8")  # part 1's summary, written
    # the server stopped since: the same status, the address and whom to ask said
    assert main(["summarize", "-p", str(desk), str(doc), "--quiet"]) == EX_TEMPFAIL
    err = capsys.readouterr().err
    assert f"Cannot reach the server at http://127.0.0.1:{server.server_address[1]}/v1" in err, err
    assert "ask whoever runs the office server" in err and "Traceback" not in err, err


def test_chat_whose_reply_the_servers_stop_cut_off_exits_75(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A reply the office server's stop cut off part-way is "try again later" (README: 75, the
    server "went away part-way"), as a connection lost is: chat exited 1, a mistake to fix first."""
    from workstation.cli import main

    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    _DayRunsOut.answered, _DayRunsOut.stopping = 0, True
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DayRunsOut)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        desk = _desk_of(server, tmp_path)
        assert main(["chat", "-p", str(desk), "What colour is the sky?"]) == 0  # (answered whole)
        capsys.readouterr()
        assert main(["chat", "-p", str(desk), "And the sea?"]) == EX_TEMPFAIL  # (cut off by the stop)
    finally:
        server.shutdown()
        server.server_close()
        _DayRunsOut.stopping = False
    assert "stopping or restarting, so the reply was cut off" in capsys.readouterr().err


async def test_f6_says_where_the_server_cut_a_summary_off_and_that_ctrl_r_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """F6's state line said "Stopped after 1 of 2 parts", as after Ctrl+X, once the error's
    toast had gone: the person was left thinking they had stopped it. It says why it ended
    where it stays, and that Ctrl+R goes on from the parts done."""
    import yaml
    from textual.widgets import Input
    from tui_helpers import until

    from workstation.tui.app import WorkstationApp

    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    folder = tmp_path / "profiles"
    folder.mkdir()
    monkeypatch.setenv("WORKSTATION_PROFILES", str(folder))
    _DayRunsOut.answered, _DayRunsOut.stopping = 0, False
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DayRunsOut)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (folder / "desk.yaml").write_text(yaml.safe_dump({
            "name": "desk", "backend": "openai", "context": 1024, "parallel": 1,
            "remote": {"base_url": f"http://127.0.0.1:{server.server_address[1]}/v1"},
            "sampling": {"temperature": 0.0, "max_tokens": 24}}), encoding="utf-8")
        doc = tmp_path / "hives.txt"
        doc.write_text(honeybee_text(8), encoding="utf-8")
        app = WorkstationApp("desk", sample_system=False, language="en")
        async with app.run_test(size=(110, 32)) as pilot:
            screen = await summarize_in_f6(pilot, app, doc)
            state = lambda: f6_state(screen)  # noqa: E731
            await until(pilot, lambda: not screen.running and state().startswith("Cut off"))
            assert screen.result is not None and screen.result.cancelled
            total = len(screen.result.chunks)
            assert state().startswith(f"Cut off after 1 of {total} parts: The server at "), state()
            assert "your key has left today" in state() and state().endswith(
                "Ctrl+R goes on from them; Alt+R does every part again."), state()
            assert "Red." in screen.summary  # part 1's summary, shown
            await pilot.press("f9")  # in the language of now, its reason too (it stayed as first said)
            await until(pilot, lambda: "kesildi" in state())
            assert "kesildi: " in state() and "The server" not in state() and "Ctrl+R kaldığı" in state(), state()
            await pilot.press("f9")
            await until(pilot, lambda: "Cut off" in state())
            # a document refused at its first part: said where the state stays, in a summary's words (it
            # said only in a toast "in a chat, the conversation so far…", then "The last summary, of
            # hives.txt, made …" as if this run's), the summary still shown said to be the earlier one
            other = tmp_path / "minutes.txt"
            other.write_text(honeybee_text(8), encoding="utf-8")
            screen.query_one("#summarize-path", Input).value = str(other)
            await pilot.press("enter")
            await until(pilot, lambda: not screen.running and state().startswith("Nothing of"))
            assert state().startswith("Nothing of minutes.txt was summarized: The server at "), state()
            assert "196 tokens (pieces of words, as the server counts text) your key has left today" in state() and "A shorter document" in state(), state()
            assert "in a chat" not in state() and "once the server is back" not in state(), state()
            assert " Once the limit is raised, or after " in state(), state()  # (its day ran out: the server is there)
            assert "The summary below is the earlier one, of hives.txt, made " in state(), state()
            _DayRunsOut.stopping = True  # the server stopping cut the first part off
            screen.query_one("#summarize-path", Input).value = str(other)
            await pilot.press("enter")
            await until(pilot, lambda: not screen.running and "stopping" in state())
            assert state().startswith("Nothing of minutes.txt was summarized: The office server is stopping or "
                                      "restarting, so the summary was cut off;"), state()
            assert "send it again" not in state() and "Ctrl+R summarizes it once the server is back." in state()
            assert "The summary below is the earlier one, of hives.txt" in state(), state()
    finally:
        _DayRunsOut.stopping = False
        server.shutdown()


def test_a_summary_says_the_server_is_stopping_to_its_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The office server began to stop while it wrote a part: F6's line (and summarize's) says
    so from then on, not only until the server's next word (it said nothing before the cut);
    batch's log says it once, and each part as it ends still (it said nothing more of the document)."""
    import yaml

    from workstation.cli import main
    from workstation.core.events import SERVER_STOPPING
    from workstation.core.server.protocol import stopping_note

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    seen: list[Any] = []
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with RemoteEngine(remote_profile(url, parallel=1)) as engine:
            _Recorder.note = stopping_note(30)
            summary = _summarize(engine, engine.profile, on_progress=seen.append)
        folder, desk = tmp_path / "inbox", tmp_path / "desk.yaml"
        folder.mkdir()
        (folder / "bees.txt").write_text(honeybee_text(2), encoding="utf-8")
        desk.write_text(yaml.safe_dump({"name": "desk", "backend": "openai", "parallel": 1,
                                        "remote": {"base_url": url, "timeout_s": 60}}), encoding="utf-8")
        capsys.readouterr()
        assert main(["batch", str(folder), "-p", str(desk), "-o", str(tmp_path / "out"), "--lang", "en"]) == 0
        log = capsys.readouterr().err
    finally:
        _Recorder.note = b""
        server.shutdown()
        server.server_close()
    assert "Red." in summary.summary
    said = [i for i, p in enumerate(seen) if p.waiting is not None and p.waiting.held == SERVER_STOPPING]
    assert said, seen
    # every report after the first word of it says it, to the summary's end
    assert all(p.waiting is not None and p.waiting.held == SERVER_STOPPING
               for p in seen[said[0]:] if p.stage not in ("done", "cancelled")), seen[said[0]:]
    assert log.count("bees.txt: the office server is stopping: this reply may be cut off…") == 1, log
    assert "bees.txt: 1 of 1 part done" in log and "batch: done bees.txt" in log, log


def test_ctrl_g_chat_sends_every_sampling_field(smollm2_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        local = make_profile(
            system_prompt="Be brief.",
            sampling={"temperature": 0.3, "top_p": 0.9, "top_k": 17, "min_p": 0.07,
                      "repeat_penalty": 1.23, "max_tokens": 9, "seed": 5, "presence_penalty": 0.4,
                      "frequency_penalty": -0.2, "stop": ["END"]},
        )
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with RemoteEngine(client_profile(local, url)) as engine:
            assert engine.run_chat(HELLO).text == "Red."
            # under a reply format no stop text, as the local engine (one cut a schema's JSON)
            engine.run_chat(HELLO, constraints=Constraints(grammar='root ::= "x"', json_schema={"type": "string"}))
    finally:
        server.shutdown()
    formatted = _Recorder.bodies[-1]
    assert formatted["stop"] == [] and formatted["response_format"]["type"] == "json_schema"
    body = _Recorder.bodies[-2]
    s = local.sampling
    assert (body["temperature"], body["top_p"], body["top_k"]) == (s.temperature, s.top_p, s.top_k)
    assert (body["min_p"], body["repeat_penalty"], body["max_tokens"], body["seed"]) == (
        s.min_p, s.repeat_penalty, s.max_tokens, s.seed)
    assert (body["presence_penalty"], body["frequency_penalty"], body["stop"]) == (0.4, -0.2, ["END"])
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_a_profile_without_a_seed_sends_a_new_one_each_turn() -> None:
    """The seed was left out, so the server's profile's seed applied: a desk PC at temperature
    0.8 gave the same reply every time, where the same profile run locally does not."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        local = make_profile(sampling={"temperature": 0.8, "max_tokens": 9, "seed": None})
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        with RemoteEngine(client_profile(local, url)) as engine:
            engine.run_chat(HELLO)
            engine.run_chat(HELLO)
    finally:
        server.shutdown()
    assert all(body["stop"] == [] for body in _Recorder.bodies[-2:])  # none: not the server profile's
    seeds = [body["seed"] for body in _Recorder.bodies[-2:]]
    assert all(isinstance(s, int) and 0 <= s < 2**32 for s in seeds) and seeds[0] != seeds[1], seeds


def test_a_desk_pc_is_told_where_its_text_goes(capsys: pytest.CaptureFixture[str]) -> None:
    """With a server's profile the text left the PC, said only by the status bar's host; over
    http:// to another machine, unencrypted with its API key, said nowhere. A server on this PC
    sends nothing off it: nothing said."""
    from workstation.core.load_notes import load_notes
    from workstation.core.phrases import say
    from workstation.tui.i18n import Texts

    def notes(url: str) -> list[str]:
        profile = profile_from_dict({"name": "desk", "backend": "openai", "remote": {"base_url": url}}, "<t>")
        return [say([n]) for n in load_notes(profile)]

    # one sentence (two "Note:"s ran together in the app's box), said once for each server
    assert notes("http://192.0.2.7:8088/v1") == [
        "Note: your messages and the documents you attach go to the server at 192.0.2.7:8088 unencrypted, as its "
        "address starts with http://; ask whoever runs it for an https:// address."]
    assert notes("https://ai.office.example/v1") == [
        "Note: your messages, the conversation before them and the documents you attach go to the server at "
        "ai.office.example, which answers them; they leave this PC."]
    assert notes("http://127.0.0.1:8088/v1") == notes("http://localhost:8088/v1") == []
    profile = profile_from_dict({"name": "d", "backend": "openai", "remote": {"base_url": "http://10.0.0.5/v1"}}, "<t>")
    assert profile.remote.server_name == "10.0.0.5"  # (as the status bar, F8 and the usage line name it too)
    tr = Texts("tr")
    assert say(load_notes(profile)[:1], tr.get).startswith("Not: mesajlarınız")  # in the app's language
    from workstation.core.load_notes import unsaid_notes
    from workstation.core.store import ConversationStore

    store = ConversationStore()
    assert unsaid_notes(load_notes(profile), store) == load_notes(profile)  # the first start: said
    assert unsaid_notes(load_notes(profile), store) == []  # the next: not again
    other = profile_from_dict({"name": "d", "backend": "openai", "remote": {"base_url": "http://10.0.0.6/v1"}}, "<t>")
    assert len(unsaid_notes(load_notes(other), store)) == 1  # another server: said for it
    store.close()
    # chat, summarize, batch: once for each server too, remembered where the app remembers it
    # (they said it at every run); the app, started after, does not say it again
    from workstation.commands import print_load_notes

    third = profile_from_dict({"name": "d", "backend": "openai", "remote": {"base_url": "http://10.0.0.7/v1"}}, "<t>")
    print_load_notes(third)
    assert "go to the server at 10.0.0.7 unencrypted" in capsys.readouterr().err
    print_load_notes(third)
    assert capsys.readouterr().err == ""
    store = ConversationStore()
    assert unsaid_notes(load_notes(third), store) == []
    store.close()
    # settings only a model loaded here uses: said unused (a draft model and a context went by in silence)
    tuned = profile_from_dict({"name": "d", "backend": "openai", "remote": {"base_url": "http://127.0.0.1:8088/v1"},
                               "context": 2048, "kv_cache": {"k": "q8_0", "v": "q8_0"},
                               "speculative": {"mode": "lookup"}}, "<t>")  # (its context is used: see remote.py)
    assert [say([n]) for n in load_notes(tuned)] == [
        "Note: these settings of this profile are not used: kv_cache, speculative (the server decides them with "
        "its own profile; they are for a model loaded on this PC)."]


# --- a server that is not workstation serve, whose reply goes round in circles -----------------------
LOOPED = "The meeting with the supplier is moved to Friday at noon. "


class _Looping(_Recorder):
    """Streams "Hello. " and the same sentence twelve times, a few characters a chunk, to its token
    limit ("length"), as a server with no loop stop does: no ``loop_kept``."""

    chunks_sent = 0

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": "no such route"}})
            return
        text = "Hello. " + LOOPED * 12
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            for i in range(0, len(text), 5):
                last = i + 5 >= len(text)
                delta = {"index": 0, "delta": {"content": text[i:i + 5]}, "finish_reason": "length" if last else None}
                self.wfile.write(f"data: {json.dumps({'choices': [delta]})}\n\n".encode())
                self.wfile.flush()
                _Looping.chunks_sent += 1
            self.wfile.write(b"data: [DONE]\n\n")
        except OSError:  # the desk PC closed the connection once it saw the loop
            pass
        self.close_connection = True


def test_a_desk_pc_stops_a_foreign_servers_reply_that_repeats_itself() -> None:
    """The desk PC's own loop watch (core/remote.py), for a server that does not stop a loop
    itself: the reply ends with its first copy, said as stopped, and the repeats are not kept."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Looping)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        profile = remote_profile(f"http://127.0.0.1:{server.server_address[1]}/v1")
        profile = dataclasses.replace(profile, sampling=dataclasses.replace(profile.sampling, max_tokens=400))
        with RemoteEngine(profile) as engine:
            events = list(engine.stream_chat(HELLO))
    finally:
        server.shutdown()
    final = events[-1]
    assert isinstance(final, TurnFinished)
    assert final.metrics.stop_reason == "loop"
    assert final.text == "Hello. " + LOOPED.strip()  # its first copy: the repeats left out
    streamed = "".join(e.text for e in events if isinstance(e, TokenDelta))
    assert streamed.startswith(final.text) and len(streamed) < len("Hello. " + LOOPED * 12)  # (it read no further)
