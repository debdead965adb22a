"""The one-shot commands as a user runs them: `workstation chat` and its figures on stderr,
and Ctrl+C (SIGINT) in `chat`, `summarize` and `batch`, sent to a real subprocess once its
output shows that it is generating (never after a sleep): exit code 130, one sentence, what
arrived kept, nothing half-written."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
import yaml
from conftest import make_profile, workload_file, write_profile_file
from docmaker import SUBJECT_PARAGRAPHS, honeybee_text

from workstation.cli import main
from workstation.core.batch_queue import DB_NAME, LOCK_NAME

ROOT = Path(__file__).resolve().parent.parent
FIGURES = re.compile(  # (thousands separated, as the app writes its figures; a wait of 10 s or more in seconds)
    r"^TTFT ([\d,]+ ms|[\d,.]+ s) · ([\d,.]+) tok/s · ([\d,]+) tokens · prompt ([\d,]+) \(\+([\d,]+) cached\) at "
    r"([\d,]+) tok/s$",
    re.M,
)


def _figures(err: str) -> tuple[float, ...] | None:
    """The chat's line of figures on stderr, as numbers, the wait in ms (None where there is
    none; a busy PC's "TTFT 17 s" was no line of figures)."""
    found = FIGURES.search(err)
    if not found:
        return None
    wait, *rest = found.groups()
    ms = float(wait.removesuffix(" ms").replace(",", "")) if wait.endswith(" ms") else \
        float(wait.removesuffix(" s").replace(",", "")) * 1000
    return (ms, *(float(g.replace(",", "")) for g in rest))


def test_a_stop_between_the_load_and_serving_is_a_clean_stop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], smollm2_path: Path) -> None:
    """SIGTERM after the model loaded and before uvicorn took the signals (its start-up lines,
    uvicorn's import) killed serve: 143 and no word in the log. It is kept for the server,
    which starts and stops, said as a stop while serving is."""
    import workstation.commands.serve as serve

    notes = serve.print_load_notes

    def stopped_meanwhile(*args: object, **kwargs: object) -> None:
        notes(*args, **kwargs)  # type: ignore[arg-type]
        signal.raise_signal(signal.SIGTERM)  # (where systemd's stop came before uvicorn's handlers)

    monkeypatch.setattr(serve, "print_load_notes", stopped_meanwhile)
    prof = _profile_file(tmp_path, max_tokens=8, context=256)
    # a level uvicorn does not know: refused before the load (it loaded, then "unexpected error: KeyError")
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "-p", str(prof), "--port", "0", "--log-level", "verbose"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.startswith("workstation: --log-level cannot be 'verbose'; choose from critical,")
    # a limit below its least, said in the bytes given ("it must be 4.1943e+06 or more") ...
    assert main(["serve", "-p", str(prof), "--port", "0", "--max-inflight-body", "0"]) == 1
    assert "--max-inflight-body is 0; it must be 4,194,304 or more." in capsys.readouterr().err
    # in the command line's language (serve took no --lang: English on a Turkish PC), its figures the Turkish way
    assert main(["serve", "-p", str(prof), "--port", "0", "--max-inflight-body", "0", "--lang", "tr"]) == 1
    assert capsys.readouterr().err == "workstation: --max-inflight-body 0; 4.194.304 ya da daha büyük olmalı.\n"
    # ... and a negative prompt limit refused, not served (every prompt was "over at most -5 tokens")
    assert main(["serve", "-p", str(prof), "--port", "0", "--max-prompt-tokens", "-5"]) == 1
    assert "--max-prompt-tokens is -5; it must be 0 or more." in capsys.readouterr().err
    assert main(["serve", "-p", str(prof), "--port", "0", "--parallel", "1", "--log-level", "WARNING"]) == 0
    err = capsys.readouterr().err
    assert "workstation: serving " in err and err.rstrip().endswith("workstation: stopped (SIGTERM)."), err
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/PID/status")
def test_a_stop_as_serve_starts_is_a_clean_stop(tmp_path: Path) -> None:
    """SIGTERM in serve's first second (systemd's restart just after a start), before the code
    that took it was imported, ended it with 143 and not a word. It is taken from the package's
    first line on: sent as soon as the process catches it (its caught-signal mask, before
    llama.cpp and the commands are imported), it is the one line and exit 0."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKSTATION_DATA": str(tmp_path / "data")}
    proc = subprocess.Popen([sys.executable, "-m", "workstation", "serve", "-p", str(tmp_path / "none.yaml")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    caught = 0
    with contextlib.suppress(OSError):  # (a process that ended: its exit says why below)
        while proc.poll() is None and not caught & (1 << (signal.SIGTERM - 1)):
            status = Path(f"/proc/{proc.pid}/status").read_text()
            caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1]
    assert (proc.returncode, err) == (0, "workstation: stopped (SIGTERM) while starting; nothing was served.\n")


def test_a_child_spawned_by_serve_keeps_sigterm_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spawned child's argv is a copy of its parent's: one of serve's (a document read apart)
    took serve's start-up SIGTERM handler, and its parent's terminate() did not end it."""
    from workstation.launch import serve_stopped_at_start, take_sigterm_if_serving

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(sys, "argv", ["/usr/bin/workstation", "serve", "-p", "office-cpu"])
    try:
        for child, taken in ((True, signal.SIG_DFL), (False, serve_stopped_at_start)):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            monkeypatch.setattr(sys, "orig_argv", [sys.executable, "-c", "spawn_main()",
                                                   *(["--multiprocessing-fork"] if child else [])])
            take_sigterm_if_serving()
            assert signal.getsignal(signal.SIGTERM) is taken, child
    finally:
        signal.signal(signal.SIGTERM, before)


def _profile_file(tmp_path: Path, max_tokens: int, context: int = 1024) -> Path:
    return write_profile_file(tmp_path / "cli-profile.yaml", context=context, threads=1,
                              sampling={"max_tokens": max_tokens})


def test_chat_says_a_reply_that_began_repeating_itself_was_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], smollm2_path: Path
) -> None:
    """The figures' line said nothing of it, and the repeats streamed to the screen first: the
    line said "the reply ends before the repeats" under them, not where."""
    prof = _profile_file(tmp_path, max_tokens=300)
    assert main(["chat", "-p", str(prof), "--json", "Write the word ok five times."]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["metrics"]["stop_reason"] == "loop" and data["text"].lower().count("five times") == 1
    kept = data["text"]
    assert main(["chat", "-p", str(prof), "Write the word ok five times."]) == 0
    out, err = capsys.readouterr()
    # the repeats printed before the loop was sure are said to be no part of the reply, and where it ends
    assert out.startswith(kept) and len(out.strip()) > len(kept)
    assert f'it ends at "{kept.strip()[-20:]}"; what was printed after that is repeats, not part of the reply.' in err
    from workstation.commands.chat import _looped_said
    from workstation.tui.i18n import Texts

    # the same sentence under --lang tr (chat's --lang itself: test_chat_streams_the_reply_and_prints_its_figures;
    # a third reply of 300 tokens only to read it cost 3 s of CPU)
    assert "ile bitiyor; ondan sonra yazılanlar tekrar, yanıtın parçası değil." in _looped_said(kept, out, Texts("tr"))

    long = "We will meet on Friday at noon in the big room on the second floor."
    assert 'ends at "…in the big room on the second floor."' in _looped_said(long, long + " We will", Texts("en"))
    assert _looped_said(long, long + "\n", Texts("en")) == Texts("en")("chat_cmd.looped")  # (no repeats shown)


def test_chat_streams_the_reply_and_prints_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], smollm2_path: Path
) -> None:
    prof = _profile_file(tmp_path, max_tokens=12)
    assert main(["chat", "-p", str(prof), "Name three colours."]) == 0
    out, err = capsys.readouterr()
    figures = _figures(err)
    assert figures, err
    assert "reading your message" not in err  # read in one part: no bar
    ttft, tps, n, prompt, cached, _pps = figures
    assert ttft > 0 and tps > 0 and 1 <= n <= 12
    # the same turn with --json: the same greedy reply, and the stderr figures were its counters
    assert main(["chat", "-p", str(prof), "--json", "Name three colours."]) == 0
    data = json.loads(capsys.readouterr().out)
    assert out.rstrip("\n") == data["text"] and data["text"].strip()
    m = data["metrics"]
    assert (int(n), int(prompt) + int(cached)) == (m["predicted_n"], m["prompt_n"] + m["cache_n"])
    assert m["stop_reason"] in ("eos", "length") and (m["stop_reason"] == "length") == (m["predicted_n"] == 12)
    # a reply cut by its limit says so (it read as finished, mid-sentence)
    assert ("The reply stopped at its limit of 12 tokens; --max-tokens" in err) == (m["stop_reason"] == "length"), err
    # in the app's language, or --lang's (it was English on a Turkish PC)
    assert main(["chat", "-p", str(prof), "--lang", "tr", "--max-tokens", "2", "Name three colours."]) == 0
    err = capsys.readouterr().err
    assert "Yanıt 2 token'lık sınırında durdu; --max-tokens (ya da profildeki" in err
    # its figures too, in the words of the app's line under a reply (they were English)
    # (Turkish figures: "1,5 sn" where a slow first token took over a second, "1.234" for thousands)
    assert re.search(r"^TTFT ([\d.]+ ms|[\d.,]+ sn) · [\d.,]+ token/sn · 2 token · istem [\d.]+ \(\+[\d.]+ önbellekten\), "
                     r"[\d.,]+ token/sn$", err, re.M), err


class _Output:
    """Everything a subprocess wrote to one pipe so far, read by a thread as it arrives."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.data = b""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[bytes]) -> None:
        while chunk := os.read(pipe.fileno(), 4096):
            with self._lock:
                self.data += chunk

    @property
    def text(self) -> str:
        with self._lock:
            return self.data.decode("utf-8", "replace")

    def join(self) -> str:
        self._thread.join(timeout=60)
        return self.text


def _run_until(args: list[str], ready: re.Pattern[str], on: str, limit_s: float = 300,
               sig: signal.Signals = signal.SIGINT) -> tuple[int, str, str]:
    """Start `workstation ARGS`, send ``sig`` once stdout/stderr (``on``) matches ``ready``, and
    return (exit code, stdout, stderr). The limit only guards against a hang."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "workstation.cli", *args], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Output(proc.stdout), _Output(proc.stderr)
    watched = out if on == "stdout" else err
    try:
        deadline = time.monotonic() + limit_s
        while not ready.search(watched.text):
            assert proc.poll() is None, f"it ended before the signal: {err.text}"
            assert time.monotonic() < deadline, f"never started generating: {err.text}"
            time.sleep(0.02)
        proc.send_signal(sig)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, out.join(), err.join()


def _one_sentence_and_no_traceback(err: str, sentence: str) -> None:
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("workstation:")]
    assert len(lines) == 1 and sentence in lines[0], err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_kill_or_a_closed_terminal_in_chat_c_keeps_the_reply_so_far(
        tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals) -> None:
    """SIGTERM (a plain ``kill``, a logout) and SIGHUP (the terminal closed) ended `chat -c`
    mid-reply with no word: the reply on screen was lost and the question left with no answer,
    which the next turn then sent beside the new one. They stop the turn as Ctrl-C does."""
    from workstation.core.store import ConversationStore

    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    prof = _profile_file(tmp_path, max_tokens=1500, context=2048)
    code, out, err = _run_until(
        ["chat", "-p", str(prof), "-c", "story", "Write a very long story about a lighthouse keeper."],
        re.compile(r"\S+\s+\S+\s+\S+\s+\S+"), on="stdout", sig=sig,
    )
    assert code == 128 + sig, err
    store = ConversationStore()
    [conv] = store.list()
    said = store.messages(conv.id)
    assert [m.role for m in said] == ["user", "assistant"]
    assert len(said[1].content.split()) >= 4 and said[1].metrics and said[1].metrics["stop_reason"] == "cancelled"
    assert said[1].metrics["model"] == str(smollm2_path.resolve())  # the file that wrote it (F4 times this PC's replies by it)
    if sig == signal.SIGTERM:
        _one_sentence_and_no_traceback(err, "stopped by a request to end (SIGTERM); the reply above is what "
                                            "arrived before it, kept in the conversation")
        assert said[1].content.startswith(out.strip()[:20])
    else:  # (a terminal gets nothing more, as it is gone; a pipe, as here, still gets what is said)
        _one_sentence_and_no_traceback(err, "stopped by its terminal closing; the reply above is what arrived "
                                            "before it, kept in the conversation")
        assert out.strip() and said[1].content.startswith(out.strip())


def _desk_for(base_url: str, tmp_path: Path) -> Path:
    """A desk PC's profile file in ``tmp_path`` for the server at ``base_url`` (written again each time)."""
    import yaml

    desk = tmp_path / "desk.yaml"
    desk.write_text(yaml.safe_dump({"name": "desk", "backend": "openai",
                                    "remote": {"base_url": base_url, "timeout_s": 30}}), encoding="utf-8")
    return desk


def test_chat_c_keeps_what_arrived_when_the_server_goes_away_mid_reply(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The office server stopped mid-reply: the paragraphs read on screen were gone from the
    conversation (only the question was kept), where Ctrl-C and the app keep them."""
    from serve_helpers import DroppingServer

    from workstation.core.store import ConversationStore

    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    server = DroppingServer()  # starts every reply ("The"), then drops the connection
    try:
        desk = _desk_for(server.base_url, tmp_path)
        assert main(["chat", "-p", str(desk), "-c", "story", "Tell me a story."]) == 75  # try again later, as batch
    finally:
        server.close()
    out, err = capsys.readouterr()
    assert out.startswith("The") and "Traceback" not in err
    assert err.rstrip().endswith("The reply above, as far as it came, is kept in the conversation."), err
    [conv] = ConversationStore().list()
    said = ConversationStore().messages(conv.id)
    assert [(m.role, m.content) for m in said] == [("user", "Tell me a story."), ("assistant", "The")]
    # "cut off: why" under it, as the app says
    assert said[1].metrics == {"stop_reason": "failed", "stop_said": (
        f"Lost the connection to {server.base_url}: the server closed the connection in the middle of the reply "
        "(it stopped or restarted).")}
    server = DroppingServer()
    try:  # --json prints no reply above
        _desk_for(server.base_url, tmp_path)
        assert main(["chat", "-p", str(desk), "-c", "story", "--json", "And then?"]) == 75
    finally:
        server.close()
    out, err = capsys.readouterr()
    assert err.rstrip().endswith("The reply so far is kept in the conversation.") and '"exit_code": 75' in out, out


def test_chat_cut_mid_reply_ends_the_reply_s_line_before_saying_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A one-off `chat` (no -c) whose server went away mid-reply: the reply's last word and the
    error ran on one line on the terminal ("made for Maxworkstation: The office server is …")."""
    from serve_helpers import DroppingServer

    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    server = DroppingServer()  # starts every reply ("The"), then drops the connection
    try:
        desk = _desk_for(server.base_url, tmp_path)
        assert main(["chat", "-p", str(desk), "Tell me a story."]) == 75
    finally:
        server.close()
    out, err = capsys.readouterr()
    assert out == "The\n" and "Traceback" not in err, (out, err)


def test_a_message_too_long_for_chat_c_is_not_kept(
        tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused as longer than the context, the message stayed in the conversation unanswered,
    joined to every later question, so each of them was refused too: the conversation was stuck
    for good. A first message so refused left a conversation of its own, said to be started."""
    from workstation.core.store import ConversationStore

    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    prof = _profile_file(tmp_path, max_tokens=4)
    long = "stapler, paper, ink, " * 600
    chat = ["chat", "-p", str(prof), "-c", "supplies"]
    assert main([*chat, long]) == 1
    err = capsys.readouterr().err
    assert "cannot hold it" in err and "Started a new conversation" not in err, err
    assert ConversationStore().list() == []
    assert main([*chat, "Name a colour."]) == 0
    assert 'Started a new conversation "supplies"' in capsys.readouterr().err
    assert main([*chat, long]) == 1
    assert capsys.readouterr().err.rstrip().endswith("The message was not kept in the conversation.")
    from workstation.core.profile_lookup import load_profile

    same = str(load_profile(str(prof)).sampling.top_p)  # an option as the profile has it: not "own"
    # 0,2: the decimal comma a Turkish PC writes, as Ctrl+E takes it (it said "must be a number")
    assert main([*chat, "And another?", "--temperature", "0,2", "--max-tokens", "3", "--top-p", same]) == 0
    [conv] = ConversationStore().list()
    said = ConversationStore().messages(conv.id)
    assert [(m.role, m.content) for m in said if m.role == "user"] == [("user", "Name a colour."),
                                                                       ("user", "And another?")]
    assert [m.role for m in said] == ["user", "assistant"] * 2
    # a turn's own settings are kept with its reply, and said where it is read (the app, F7)
    assert "sampling" not in (said[1].metrics or {}) and (said[3].metrics or {})["sampling"] == {
        "max_tokens": 3, "temperature": 0.2}
    assert "own settings: max_tokens 3, temperature 0.2*" in ConversationStore().to_markdown(conv.id)


def test_chat_c_says_when_the_model_no_longer_sees_the_conversations_start(
        tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """--json had "left_out_n": 16, but the plain line under the reply said nothing of it."""
    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    prof = _profile_file(tmp_path, max_tokens=4, context=256)
    chat = ["chat", "-p", str(prof), "-c", "supplies"]
    for i in range(4):
        assert main([*chat, f"Order {i}: " + "stapler, paper, ink, " * 12]) == 0
    err = capsys.readouterr().err
    assert "The model did not see this conversation's first " in err and "no longer fit its context" in err, err


def test_chat_c_counts_a_follow_up_of_the_table_the_conversation_last_had_attached(
        tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An invoice CSV attached in the app and asked about; then `chat -c Invoices "How many invoices
    does Birlik AS have?"`: no counted line, the model named the wrong invoices. The table the
    conversation last had attached is read again from its message (the file gone since) and
    counted as the app counts a follow-up: said under the reply, given to the model, kept with it."""
    from workstation.core.documents import read_document
    from workstation.core.store import ConversationStore
    from workstation.core.summary_chunks import with_facts
    from workstation.core.table_facts import facts_record
    from workstation.tui.attachment import with_attached

    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    invoices = tmp_path / "invoices.csv"
    invoices.write_text("Invoice,Client,Amount,Status\nINV-101,Ada Ltd,1200.50,paid\nINV-102,Birlik AS,980.00,unpaid\n"
                        "INV-103,Ada Ltd,1114.75,paid\nINV-105,Birlik AS,2380.10,unpaid\n", encoding="utf-8")
    document = read_document(invoices)
    invoices.unlink()
    store = ConversationStore()
    conv = store.new("Invoices")
    store.add_message(conv.id, "user", with_attached("Who are the clients?", "Document: invoices.csv",
                                                     with_facts(document, all_rows=True).text.rstrip()),
                      facts=[facts_record(f) for f in document.facts])
    store.add_message(conv.id, "assistant", "Ada Ltd and Birlik AS.")
    store.close()
    prof = _profile_file(tmp_path, max_tokens=2, context=1024)
    assert main(["chat", "-p", str(prof), "-c", "Invoices", "How many invoices does Birlik AS have?"]) == 0
    said = "Counted by the program: 2 rows where Client is Birlik AS (INV-102, INV-105)"
    assert f"\n{said}\n" in "\n" + capsys.readouterr().err
    store = ConversationStore()
    try:
        question, reply = store.messages(conv.id)[-2:]
    finally:
        store.close()
    assert question.content.endswith(f"\n\n- For this question, the program counted: {said[len('Counted by the program: '):]}.")
    assert (reply.metrics or {}).get("counted", [{}])[0].get("listed") == ["INV-102", "INV-105"]


def test_chat_counts_a_table_pasted_in_its_message_as_the_app_does(
        tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`chat "…invoice lines… is this right?"` (or the lines piped in): the app counted a pasted
    table's rows and sums under its reply and for the model, `chat` counted nothing."""
    from test_pasted_tables import INVOICE, SAID

    from workstation.core.store import ConversationStore

    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    prof = _profile_file(tmp_path, max_tokens=2, context=1024)
    assert main(["chat", "-p", str(prof), "-c", "Invoice check", INVOICE]) == 0
    assert f"\n{SAID}\n" in "\n" + capsys.readouterr().err
    store = ConversationStore()
    try:
        conv = next(c for c in store.list() if c.title.startswith("Invoice"))
        question, reply = store.messages(conv.id)[-2:]
    finally:
        store.close()
    assert question.content == f"{INVOICE}\n\n- For this question, the program counted: {SAID[len('Counted by the program: '):]}."
    assert len((reply.metrics or {}).get("counted", [])) >= 2


def test_chat_says_what_profiles_check_notes_once_it_loads(
        tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.core.model_info import read_model_info

    trained = read_model_info(smollm2_path).context_length
    prof = _profile_file(tmp_path, max_tokens=1, context=trained + 256)
    assert main(["chat", "-p", str(prof), "Hi"]) == 0
    err = capsys.readouterr().err
    assert f"Note: context is {trained + 256:,} tokens but " in err and f"was trained for {trained:,}" in err, err


def test_a_memory_limit_is_planned_for_and_named_when_it_bites(tmp_path: Path, smollm2_path: Path) -> None:
    """Under `ulimit -v` (a container's memory limit) `fit` read the machine's free memory and
    said a 32K context runs; loading it then said only "failed to allocate buffer for kv cache".
    The load was let through while it fitted the limit plus the 1 GB kept for other programs
    (not within a limit: under a cgroup the kernel killed it, with no word but "Killed"), and
    the advice named no context that fits."""
    import resource

    from workstation.core.hardware import gpus

    prof = _profile_file(tmp_path, max_tokens=2, context=32768)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "workstation.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (600 * 2**20, resource.RLIM_INFINITY)))

    planned = run("fit", "-p", str(prof), "--json")
    assert json.loads(planned.stdout)["fits"] is False, planned.stdout + planned.stderr
    said = json.loads(planned.stdout)["verdict"]
    assert re.search(r"the memory limit this program runs under leaves \d+ MB for it", said) and "with Context set to " in said \
        and "it fits here" in said and "kept for the system" not in said, said
    refused = run("chat", "-p", str(prof), "Hi")  # before loading: the plan's sentence
    assert refused.returncode == 1 and "was not loaded; it does not fit" in refused.stderr, refused.stderr
    # what the plan cannot see (GPU layers asked for, no GPU seen) is loaded, and the failure named
    unseen = write_profile_file(tmp_path / "gpu-profile.yaml", context=32768, threads=1, gpu_layers=1,
                                sampling={"max_tokens": 2})
    loaded = run("chat", "-p", str(unseen), "Hi")
    expected = "was not loaded; it does not fit" if gpus() else \
        "There was not enough memory for it (this PC's, or the limit this program runs under)"
    assert loaded.returncode == 1 and expected in loaded.stderr, loaded.stderr


def test_ctrl_c_in_chat_keeps_what_arrived(tmp_path: Path, smollm2_path: Path) -> None:
    prof = _profile_file(tmp_path, max_tokens=1500, context=2048)
    code, out, err = _run_until(
        ["chat", "-p", str(prof), "Write a very long story about a lighthouse keeper."],
        re.compile(r"\S+\s+\S+\s+\S+\s+\S+"), on="stdout",  # a few words have streamed
    )
    assert code == 130
    _one_sentence_and_no_traceback(err, "stopped; the reply above is what arrived before Ctrl-C")
    figures = _figures(err)
    assert figures and 4 <= figures[2] < 1500, err  # stopped early, its figures still printed
    assert len(out.split()) >= 4


def test_ctrl_c_before_the_reply_began_says_only_that(tmp_path: Path, smollm2_path: Path) -> None:
    """Ctrl-C while a long message was read printed "TTFT 193 ms · 0 tokens" over "stopped by
    Ctrl-C before the reply began": figures of a reply that never was."""
    prof = _profile_file(tmp_path, max_tokens=8, context=4096)
    long = "Check this list: " + "stapler, paper, ink, folders, " * 300
    code, out, err = _run_until(["chat", "-p", str(prof), long], re.compile(r"reading your message"), on="stderr")
    assert code == 130 and not out.strip()
    _one_sentence_and_no_traceback(err, "stopped by Ctrl-C before the reply began")
    assert "TTFT" not in err and "0 tokens" not in err, err
    # in the command's language, as summarize's (a Turkish PC's said it in English)
    from workstation.commands.chat import turn_stopped
    from workstation.tui.i18n import Texts

    assert str(turn_stopped(signal.SIGTERM, Texts("tr"), began=True, kept=True)) == (
        "bir sonlandırma isteği (SIGTERM) ile durduruldu; yukarıdaki yanıt ondan önce gelen kısımdır ve sohbete kaydedildi.")


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--max-tokens", "0", "--max-tokens is 0; allowed values are 1 to 10,000,000."),
    ("--max-tokens", "-3", "--max-tokens is -3; allowed values are 1 to 10,000,000."),
    ("--top-k", "99999999999", "--top-k is 99999999999; allowed values are 0 to 1,000,000 (0 is off)."),
    ("--temperature", "-1", "--temperature is -1.0; allowed values are 0 to 5."),
    ("--top-p", "0", "--top-p is 0.0; allowed values are above 0 up to 1."),
    ("--presence-penalty", "3", "--presence-penalty is 3.0; allowed values are -2 to 2 (0 is off)."),
    ("--stop", "", "--stop may hold up to 16 texts, none of them empty."),
])
def test_chat_refuses_sampling_options_a_profile_may_not_have(
        option: str, value: str, said: str, capsys: pytest.CaptureFixture[str]) -> None:
    """chat answered `--max-tokens 0` (and -3) with a token, and took `--temperature -1`,
    where a profile, summarize and serve refuse them."""
    assert main(["chat", option, value, "hi"]) == 1
    assert capsys.readouterr().err == f"workstation: {said}\n"


def test_chat_takes_the_profiles_sampling_settings_as_options(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    """chat had only --temperature, --seed and --max-tokens: a stop text or top-k for one turn
    meant writing a profile. The reply ends before --stop's text; --top-k 1 is greedy."""
    turn = ["chat", "--max-tokens", "24", "--temperature", "0", "Name three colours of the rainbow."]
    assert main(turn) == 0
    whole = capsys.readouterr().out.strip()
    words = whole.split()
    assert len(words) >= 4, whole
    cut = whole.index(" " + words[3])  # the reply ends before the fourth word
    assert main([*turn, "--stop", "never in a reply", "--stop", " " + words[3]]) == 0
    assert capsys.readouterr().out.strip() == whole[:cut].strip()
    # greedy by top-k at a high temperature: the same reply as temperature 0
    assert main(["chat", "--max-tokens", "24", "--temperature", "1.5", "--top-k", "1", "--seed", "7",
                 "Name three colours of the rainbow."]) == 0
    assert capsys.readouterr().out.strip() == whole
    # a stop text under a reply format: refused (locally it was dropped, a desk PC's cut the JSON)
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object"}', encoding="utf-8")
    assert main(["chat", "--stop", "x", "--json-schema", str(schema), "hi"]) == 1
    assert capsys.readouterr().err == ("workstation: --stop cannot be used with --json-schema: a stop text would "
                                       "cut the JSON the schema asks for.\n")


def test_a_profile_that_cannot_fit_is_not_loaded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], smollm2_path: Path) -> None:
    """`profiles check` said "does not fit" and `chat` loaded it anyway: a 1M-token context
    took all of a 23 GB machine's memory (peak 23.8 GB) to answer "hi". Here 8 slots of 1M
    tokens: a K/V cache of 180 GB, which no machine this runs on has free."""
    import dataclasses

    from workstation.core.profile_plan import plan_for_profile

    profile = make_profile(context=1_048_576, parallel=8, threads=1, sampling={"max_tokens": 2})
    prof = write_profile_file(tmp_path / "huge.yaml", profile)
    plan = plan_for_profile(dataclasses.replace(profile, context=8 * 1_048_576))
    if plan.kv_cache_bytes <= plan.ram_available:
        pytest.skip(f"this machine has {plan.ram_available / 2**30:.0f} GB free: room for the whole cache")
    assert main(["chat", "-p", str(prof), "hi"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("workstation: The profile ") and "was not loaded; it does not fit: needs" in err, err
    assert err.count("\n") == 1 and "loading" not in err.lower()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_while_a_model_loads_stops_once_it_is_loaded(
    smollm2_path: Path, capfd: pytest.CaptureFixture[str], sig: signal.Signals
) -> None:
    """Ctrl-C in the middle of loading (a callback from llama.cpp: its progress, its log) was
    raised inside the callback, where ctypes printed "Exception ignored … KeyboardInterrupt"
    with a traceback and dropped it, and the command went on to answer. SIGTERM where `serve`
    takes it as Ctrl-C (``terminate_as_ctrl_c``: `systemctl stop` while its model loaded
    killed it, 143 and not a word) stops the load the same way, and serve says so."""
    from workstation.core.runtime import LoadedModel, RuntimeSettings
    from workstation.core.server.process import terminate_as_ctrl_c

    pressed: list[float] = []
    seen: list[float] = []
    # (as they were: a test before it in the same process may leave another Ctrl-C handler in place)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    def progress(value: float) -> None:
        seen.append(value)
        if not pressed and 0 < value < 1:
            pressed.append(value)
            signal.raise_signal(sig)  # as a person's Ctrl-C, or a service's stop, during the load

    with pytest.raises(KeyboardInterrupt), terminate_as_ctrl_c() as terminated:
        LoadedModel(smollm2_path, RuntimeSettings(n_ctx=256), progress=progress)
    assert pressed, "the load never reported progress"
    assert seen[-1] < 1, seen  # stopped part-way
    assert terminated == ([sig] if sig == signal.SIGTERM else [])
    assert "Exception ignored" not in capfd.readouterr().err
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # Ctrl-C works as before


def test_sigterm_in_a_load_step_stops_serve_started_with_ctrl_c_ignored() -> None:
    """A server started in the background by a script (``workstation serve &``) has Ctrl-C
    ignored (SIG_IGN). SIGTERM during a llama.cpp call that cannot stop part-way (the context's
    creation) was kept for the end of the call and then handed to the ignored Ctrl-C: lost, so
    the server went on to serve after its stop (found with `kill` 1.5 s after the start). A
    Ctrl-C that is ignored stays ignored, during such a call too."""
    from workstation.core.runtime import ctrl_c_after_the_call
    from workstation.core.server.process import terminate_as_ctrl_c

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt), terminate_as_ctrl_c() as terminated:
            with ctrl_c_after_the_call() as pressed:
                signal.raise_signal(signal.SIGTERM)  # the service's stop, as llama.cpp logs
                assert pressed  # (a load's progress stops it part-way: it is told)
        assert terminated == [signal.SIGTERM]
        with ctrl_c_after_the_call() as pressed:
            signal.raise_signal(signal.SIGINT)
        assert not pressed  # (nor does it stop a load)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize(("module", "raised"), [
    ("workstation.commands.parser", "KeyboardInterrupt()"),
    # Python 3.11 wraps a Ctrl-C that falls in a class body's __set_name__ (ipaddress has one)
    ("workstation.commands.parser", "RuntimeError('Error calling __set_name__')"),
    ("workstation.launch", "KeyboardInterrupt()"),
    # the command's very first import (`import workstation` loads llama.cpp's bindings first)
    ("llama_cpp", "KeyboardInterrupt()"),
    ("llama_cpp", "RuntimeError('Error calling __set_name__')"),
])
@pytest.mark.parametrize("started", ["launcher", "-m"])
def test_ctrl_c_while_the_command_starts_is_one_sentence(tmp_path: Path, module: str, raised: str,
                                                         started: str) -> None:
    """Ctrl-C within ~40 ms of Enter fell in the imports of the command's own modules, before
    any handler, and Python printed a traceback from whichever import it was in. Run as the
    installed command runs (its launcher, scripts/setup.sh's), with the key pressed there, and
    as ``python -m workstation`` (a desktop shortcut's, advice's): its package's import, where
    llama.cpp's bindings load (~0.3 s), came before any of its code and printed the traceback."""
    pressed = (
        "import sys\n"
        "class CtrlC:\n"
        "    pressed = False\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r} and not CtrlC.pressed:\n"  # one press
        "            CtrlC.pressed = True\n"
        "            try:\n"
        "                raise KeyboardInterrupt\n"
        "            except KeyboardInterrupt as pressed:\n"
        f"                raise {raised} from pressed\n"
        "        return None\n"
        "sys.meta_path.insert(0, CtrlC())\n"
    )
    if started == "launcher":
        launcher = (Path(sys.executable).parent / "workstation").read_text(encoding="utf-8")
        words = ["-c", pressed + launcher.split("\n", 1)[1]]  # (without its #! line)
        path = str(ROOT)
    else:  # the key pressed from Python's start-up on (its site module imports sitecustomize)
        (tmp_path / "sitecustomize.py").write_text(pressed, encoding="utf-8")
        words, path = ["-m", "workstation"], f"{tmp_path}{os.pathsep}{ROOT}"
    proc = subprocess.run([sys.executable, *words, "hw"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path}, timeout=120)
    assert proc.returncode == 130
    _one_sentence_and_no_traceback(proc.stderr, "workstation: stopped.")


def test_a_word_a_c_locale_could_not_decode_is_one_sentence_saying_how_to_set_utf8() -> None:
    """`LC_ALL=C LANG=C PYTHONUTF8=0 ./run.sh chat "… café"` said "unexpected error:
    UnicodeEncodeError: 'utf-8' codec can't encode characters …: surrogates not allowed"."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0",
           "PYTHONCOERCECLOCALE": "0"}
    proc = subprocess.run([sys.executable, "-m", "workstation.cli", "chat", "Reply with the word café".encode()],
                          cwd=ROOT, capture_output=True, env=env, timeout=120)
    assert proc.returncode == 1 and proc.stdout == b"", proc
    _one_sentence_and_no_traceback(proc.stderr.decode(), "language setting (LC_ALL=C) is not UTF-8")
    assert "LC_ALL=C.UTF-8" in proc.stderr.decode()


def test_a_reader_gone_from_the_pipe_is_exit_code_0_for_every_command(tmp_path: Path) -> None:
    """`chat "…" | head -1`, `models list | head -1` and `fit | head -1` exited 1 (chat with no
    word), while `hw`, `size office-20` and `conversations show #1 | head -1` exited 0. Now
    every command: 0, and nothing on stderr (Python's own "Exception ignored" included). The
    pipe here has no reader from the start, so every write meets it gone."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKSTATION_DATA": str(tmp_path / "data")}
    ended = {}
    for words in (["hw"], ["models", "list"], ["fit"], ["chat", "--max-tokens", "4", "Hi"],
                  ["chat", "-c", "Piped", "--max-tokens", "4", "Hi"]):
        read, write = os.pipe()
        os.close(read)
        try:
            proc = subprocess.run([sys.executable, "-m", "workstation.cli", *words], cwd=ROOT, stdout=write,
                                  stderr=subprocess.PIPE, text=True, env=env, timeout=120)
        finally:
            os.close(write)
        ended[" ".join(words)] = (proc.returncode, proc.stderr)
    started = ended.pop("chat -c Piped --max-tokens 4 Hi")
    assert ended == dict.fromkeys(ended, (0, "")), ended
    assert started[0] == 0 and 'Started a new conversation "Piped"' in started[1], started
    from workstation.core.store import ConversationStore

    store = ConversationStore(tmp_path / "data" / "conversations.sqlite3")
    try:  # `chat -c … | head`: the reply is kept whole (it was lost, the question left with none)
        kept = store.messages(store.list()[0].id)
        assert [m.role for m in kept] == ["user", "assistant"] and kept[1].content.strip()
        assert (kept[1].metrics or {}).get("stop_reason") in ("length", "eos", "stop")
    finally:
        store.close()


def test_standard_input_or_output_closed_is_no_python_error(tmp_path: Path) -> None:
    """`chat hi <&-` and `chat <&-` said "unexpected error: AttributeError: 'NoneType' object has
    no attribute 'fileno'", `chat hi >&-` "... 'write'", `models list >&-` "... 'flush'". Now
    standard input closed reads as /dev/null, and standard output closed is a reader gone from
    the start: exit 1, nothing said."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKSTATION_DATA": str(tmp_path / "data")}

    def ran(closed: str, *words: str) -> tuple[int, str]:
        proc = subprocess.run(["bash", "-c", f'exec "$0" -m workstation "$@" {closed}', sys.executable, *words],
                              cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
        return proc.returncode, proc.stderr

    code, said = ran("<&-", "chat")  # (as with </dev/null)
    assert code == 2 and said.startswith("workstation: '") and " chat' needs text (see '" in said, said
    code, said = ran("<&-", "chat", "--max-tokens", "2", "Hi")
    assert code == 0 and "unexpected" not in said, said
    assert ran(">&-", "models", "list") == (1, "")
    code, said = ran(">&-", "chat", "--max-tokens", "2", "Hi")
    assert code == 1 and "unexpected" not in said and "Exception ignored" not in said, said


@pytest.mark.parametrize("step", ["-c", "--ensure"])
def test_ctrl_c_while_run_sh_sets_up_is_one_sentence(tmp_path: Path, step: str) -> None:
    """Ctrl-C in the first second of ./run.sh fell in set-up's Python steps: "Fatal Python error:
    init_import_site" (pressed while Python started up), a KeyboardInterrupt traceback from
    `import llama_cpp` (the default model's check), or the version check's run cut short and
    read as "workstation needs Python 3.11 or newer". Pressed as the step starts (``-c``: the
    version check, the first; ``--ensure``: the model's check, the last): a sitecustomize sends
    SIGINT to the terminal's process group, as the key does."""
    import hashlib
    import pty

    from conftest import read_terminal, wait_for_exit

    stamp = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    if not list((ROOT / ".venv").glob(f".deps-{stamp}*")):
        # set-up not done for this checkout's pyproject.toml: run.sh would install the package
        # first (minutes), into whatever venv .venv is (a clone's link to another checkout's
        # venv, repointed at the clone); ./test.sh always leaves the stamp, so it runs there
        pytest.skip("set-up (./test.sh) has not been run for this checkout's pyproject.toml")
    (tmp_path / "sitecustomize.py").write_text(
        f"import os, signal, sys\nif {step!r} in sys.argv:\n    os.killpg(os.getpgrp(), signal.SIGINT)\n",
        encoding="utf-8")
    pid, fd = pty.fork()
    if pid == 0:  # the child: run.sh in a terminal of its own (its own process group)
        os.environ["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{ROOT}"
        os.execv("/bin/bash", ["bash", str(ROOT / "run.sh"), "hw"])
    try:
        seen = read_terminal(fd, lambda _: False, 120, "ended")  # (until the terminal closes)
        code = wait_for_exit(pid, 60, "run.sh still runs")
    finally:
        os.close(fd)
    assert seen.decode(errors="replace").strip() == "workstation: stopped.", seen
    assert code == 130


@pytest.mark.parametrize("words", [["serve"], ["--help"], ["chat", "Hello"]])  # (hw needs no model: it works)
def test_a_missing_llama_cpp_library_is_one_sentence_saying_how_to_set_up_again(
        tmp_path: Path, words: list[str]) -> None:
    """llama-cpp-python's library gone or unloadable (an interrupted build, a copied folder)
    printed "unexpected error: FileNotFoundError: Shared library with base name 'llama' not
    found" for every command, --help too."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LLAMA_CPP_LIB_PATH": str(tmp_path)}  # (an empty folder)
    proc = subprocess.run([sys.executable, "-m", "workstation.cli", *words], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 1
    _one_sentence_and_no_traceback(proc.stderr, "llama.cpp's library, which runs the models, could not be loaded")
    venv = ROOT / ".venv"
    assert f"delete the folder {venv}, then start {ROOT / 'run.sh'}" in proc.stderr, proc.stderr
    assert "unexpected error" not in proc.stderr


def test_ctrl_c_while_quantizing_stops_at_once_and_leaves_no_file(tmp_path: Path, gemma_path: Path) -> None:
    """llama.cpp's quantizer cannot be stopped, and in the main thread Ctrl-C waited for all of
    it, was then raised inside its log callback (ctypes printed a traceback and dropped it), and
    the copy was written and kept, exit code 0, as if no key had been pressed. Said in the
    command line's language (it was English under Turkish; the English is "workstation: stopped.")."""
    out = tmp_path / "copy.gguf"
    code, _, err = _run_until(
        ["models", "quantize", "--lang", "tr", str(gemma_path), "-t", "q8_0", "--allow-requantize", "-o", str(out)],
        re.compile(r"\S+ -> copy\.gguf niceleniyor \.\.\."), on="stderr",
    )
    assert code == 130
    _one_sentence_and_no_traceback(err.split("\n", 1)[1], "workstation: durduruldu.")  # after the requantize warning
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no copy, no half-written .part


def test_a_summary_whose_file_cannot_be_written_is_printed_not_lost(
        tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The output's folder was there when the command began (checked first), and the file could
    not be written once the model had finished (a full disk; here /proc, which takes no new
    files): the finished summary was thrown away with the error."""
    prof = _profile_file(tmp_path, max_tokens=12)
    doc = tmp_path / "memo.txt"
    doc.write_text("The canteen closes at two on Fridays from March.\n", encoding="utf-8")
    assert main(["summarize", str(doc), "-p", str(prof), "-o", "/proc/memo-summary.md"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("# Summary of memo.txt"), out
    assert "Cannot write /proc/memo-summary.md: the folder /proc does not take new files. The summary is " \
           "printed above instead, so that it is not lost." in err, err


@pytest.mark.parametrize(("options", "said"), [
    ("size=64k", "the disk is full"),
    ("size=64k,ro", "it is on a disk that takes no writes (read-only)"),
])
def test_a_full_or_read_only_disk_is_one_sentence(
        tmp_path: Path, options: str, said: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`size -o`, `batch -o`, `models add/pull`, `quantize -o` on a full or read-only disk said
    "unexpected error: OSError: [Errno 28] No space left on device" (or 30, Read-only)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a small disk needs root")
    try:
        if "ro" not in options:
            with open(disk / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
                while True:
                    f.write(b"x" * 65536)
        assert main(["size", "office-20", "-o", str(disk / "report.md")]) == 1
        err = capsys.readouterr().err
        assert (err.startswith(f"workstation: Cannot write {disk}/report") and err.endswith(f": {said}.\n")
                or err.startswith("workstation: A disk this command writes to is full (No space left on device)")), err
        if "ro" not in options:  # `batch -o` there said that too, naming no folder, and left its lock file
            (tmp_path / "docs").mkdir()
            (tmp_path / "docs" / "memo.txt").write_text("The canteen closes at two on Fridays.\n")
            assert main(["batch", str(tmp_path / "docs"), "-o", str(disk / "out")]) == 1
            err = capsys.readouterr().err
            assert f"The batch run cannot write in '{disk / 'out'}' (No space left on device)" in err, err
            assert not list((disk / "out").iterdir())
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)  # (a store left open: busy)


def test_a_database_on_a_full_or_read_only_disk_says_which(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """SQLite says "disk I/O error" on a full disk (no room for the -wal and -shm files) and
    "unable to open database file" in a read-only folder: `conversations`, `keys list` and
    `chat -c` said only that."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a small disk needs root")
    monkeypatch.setenv("WORKSTATION_DATA", str(disk))
    try:
        made = subprocess.run([sys.executable, "-m", "workstation.cli", "conversations"], cwd=ROOT, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True)
        assert made.returncode == 0 and (disk / "conversations.sqlite3").exists()  # made while there was room
        with open(disk / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
            while True:
                f.write(b"x" * 4096)
        capsys.readouterr()
        assert main(["conversations"]) == 0  # read as it is (it said "cannot be opened": nothing listed)
        assert "No saved conversations yet" in capsys.readouterr().out
        assert main(["chat", "-c", "notes", "Hello"]) == 1  # a write: refused before any work
        assert "cannot be opened (disk I/O error: the disk holding it is full)." in capsys.readouterr().err
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        assert main(["chat", "-c", "notes", "Hello"]) == 1  # (listing reads: that works, read-only)
        err = capsys.readouterr().err
        assert f"its folder {disk} cannot be written (read-only))." in err
        assert f"Make {disk} writable for this user, or set WORKSTATION_DATA to a folder that is" in err  # what to do
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)  # (a store left open: busy)


def _full_for(role: str) -> None:
    """The conversation file refuses to take a message of ``role`` as a full disk does (a
    trigger in it: the same error at exactly that write, where a tmpfs's last bytes are not)."""
    from workstation.core.store import DB_NAME as CONVERSATIONS
    from workstation.core.store import ConversationStore

    path = Path(os.environ["WORKSTATION_DATA"]) / CONVERSATIONS
    ConversationStore(path).close()  # made as the app makes it
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER IF EXISTS full")
        db.execute(f"CREATE TRIGGER full BEFORE INSERT ON messages WHEN NEW.role = '{role}' "
                   "BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END")


def test_a_reply_or_summary_the_conversation_cannot_keep_is_printed_and_said(
        tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`chat -c` streamed the reply, then said only "cannot be used (database or disk is full)";
    `summarize -c` worked for minutes, then printed nothing at all."""
    prof = _profile_file(tmp_path, max_tokens=8)
    _full_for("assistant")
    assert main(["chat", "-p", str(prof), "-c", "notes", "Say hello."]) == 1
    out, err = capsys.readouterr()
    assert main(["chat", "-p", str(prof), "-c", "notes", "--json", "Say hello."]) == 1  # its JSON too
    out_json, err_json = capsys.readouterr()
    assert json.loads(out_json)["text"] and "The reply above was not saved" in err_json, out_json + err_json
    assert out.strip() and "database or disk is full" in err and err.rstrip().endswith("The reply above was not saved in the conversation; free some space, then ask again."), err
    doc = tmp_path / "memo.txt"
    doc.write_text("The canteen closes at two on Fridays from March.\n", encoding="utf-8")
    _full_for("user")
    assert main(["summarize", str(doc), "-p", str(prof), "-c", "memo", "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("# Summary of memo.txt"), out
    assert 'The summary is printed above, but it was not saved as the conversation "memo"' in err, err


def _partial_summary_said(out_md: Path, err: str, total: int, by: str) -> tuple[int, str]:
    """The checks of a summary stopped part-way by ``by`` (its sentence, its file, its closing
    line); returns (parts finished, the file's text)."""
    _one_sentence_and_no_traceback(err, f"stopped; the summary in {out_md} covers only the parts finished before {by}.")
    text = out_md.read_text(encoding="utf-8")
    done = re.search(r"^> Stopped after (\d+) of (\d+) parts", text, re.M)
    assert text.startswith("# Summary of bees.txt") and done, text
    assert 1 <= int(done.group(1)) < int(done.group(2)) == total
    assert text.count("\n- **") == int(done.group(1))  # a point for each finished part, no more
    assert re.search(rf"^_{done.group(1)} of {total} parts read \(about [\d,.]+ of the document's [\d,]+ words\); .* s\._$",
                     text, re.M), text
    assert sorted(p.name for p in out_md.parent.iterdir()) == ["bees.txt", "cli-profile.yaml", "summary.md"]
    # the closing line says so too (it said the whole document was "read and summarized")
    assert f"bees.txt: {total} parts, {done.group(1)} of {total} parts summarized before the stop at " in err, err
    assert err.rstrip().endswith("The same command goes on from them (--start-over summarizes every part again)."), err
    return int(done.group(1)), text


def test_ctrl_c_in_summarize_writes_a_whole_partial_summary(tmp_path: Path, smollm2_path: Path) -> None:
    """SIGTERM (a plain kill) too: it ended the summary with no word and nothing written. (The
    first run is stopped by SIGTERM, the others by Ctrl-C: one process for each check.)"""
    prof = _profile_file(tmp_path, max_tokens=24, context=256)  # (small parts: each one read quickly)
    doc = tmp_path / "bees.txt"
    doc.write_text(honeybee_text(3), encoding="utf-8")
    out_md = tmp_path / "summary.md"
    code, _out, err = _run_until(
        ["summarize", str(doc), "-p", str(prof), "-o", str(out_md)],
        re.compile(r"\] 1/(\d+) parts"), on="stderr", sig=signal.SIGTERM,  # the first part is summarized
    )
    assert code == 128 + signal.SIGTERM
    total = int(re.search(r"\] 1/(\d+) parts", err).group(1))  # type: ignore[union-attr]
    assert total >= 3
    k, text = _partial_summary_said(out_md, err, total, "a request to end (SIGTERM)")
    # the same command, in a new process, goes on from the parts finished (it began at part 1)
    code, _out, err = _run_until(
        ["summarize", str(doc), "-p", str(prof), "-o", str(out_md)],
        re.compile(rf"\] {k + 1}/{total} parts"), on="stderr",  # one more part is summarized
    )
    assert code == 130 and f"bees.txt: going on from the {k} of {total} parts finished before it stopped\n" in err, err
    points = lambda text: re.findall(r"^- \*\*.*$", text, re.M)  # noqa: E731
    _k, again = _partial_summary_said(out_md, err, total, "Ctrl-C")  # Ctrl-C's partial summary: as SIGTERM's
    assert len(points(again)) > k and points(again)[:k] == points(text)[:k], (text, again)
    # --start-over does every part again, and its own parts are kept in place of the old ones; a
    # whole summary in -o is kept over the parts of a run stopped part-way (it was replaced)
    whole = f"# Summary of bees.txt\n\nBees.\n\n_Read in {total} parts (about 7 words); the model was asked {total} times; 1 s._\n"
    out_md.write_text(whole, encoding="utf-8")
    code, _out, err = _run_until(
        ["summarize", str(doc), "-p", str(prof), "-o", str(out_md), "--start-over"],
        re.compile(rf"\] 1/{total} parts"), on="stderr",
    )
    assert code == 130 and "going on from" not in err, err
    assert out_md.read_text(encoding="utf-8") == whole
    _one_sentence_and_no_traceback(err, f"stopped by Ctrl-C; {out_md} keeps the whole summary it held, not this run's "
                                        "parts. The same command without --start-over goes on from them.")
    code, _out, err = _run_until(
        ["summarize", str(doc), "-p", str(prof), "-o", str(out_md)], re.compile(rf"\] 2/{total} parts"), on="stderr")
    assert code == 130 and f"bees.txt: going on from the 1 of {total} parts finished before it stopped\n" in err, err


def test_ctrl_c_before_any_part_leaves_an_earlier_summary_alone(tmp_path: Path, smollm2_path: Path) -> None:
    """Stopped before the first part is done: there is nothing to write, so the summary an
    earlier run left in the output file stays (it was replaced by an empty 'stopped' stub)."""
    prof = _profile_file(tmp_path, max_tokens=400, context=512)
    doc = tmp_path / "bees.txt"
    doc.write_text(honeybee_text(8), encoding="utf-8")
    out_md = tmp_path / "summary.md"
    out_md.write_text("# Summary of bees.txt\n\nLast night's whole summary.\n\n"
                      "_Read in 8 parts (about 3,400 words); the model was asked 9 times; 21 s._\n", encoding="utf-8")
    before = out_md.read_bytes()
    code, _out, err = _run_until(
        ["summarize", str(doc), "-p", str(prof), "-o", str(out_md)],
        re.compile(r"\] 0/(\d+) parts"), on="stderr",  # reading, nothing summarized yet
    )
    assert code == 130
    _one_sentence_and_no_traceback(err, f"stopped by Ctrl-C before any part was summarized, so nothing was written. "
                                         f"{out_md} was left as it was.")
    assert out_md.read_bytes() == before
    assert "tok/s" not in err  # no figures for work that was not done


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP])
def test_ctrl_c_in_batch_leaves_the_document_pending(tmp_path: Path, smollm2_path: Path, sig: signal.Signals) -> None:
    """A closed terminal (SIGHUP) too: it killed the run, the document left "running"."""
    prof = _profile_file(tmp_path, max_tokens=16, context=256)  # (small parts: each one read quickly)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.txt").write_text(SUBJECT_PARAGRAPHS[0], encoding="utf-8")
    (inbox / "b.txt").write_text(honeybee_text(2), encoding="utf-8")  # several parts
    out = tmp_path / "out"
    code, _out, err = _run_until(
        ["batch", str(inbox), "-p", str(prof), "-o", str(out), "--full-priority"],  # (not behind the other tests)
        re.compile(r"b\.txt: 1 of \d+ parts done"), on="stderr", sig=sig,  # b.txt's first part is summarized
    )
    assert code == 128 + sig
    _one_sentence_and_no_traceback(err, "run the same command again to continue")
    con = sqlite3.connect(out / DB_NAME)
    try:
        status = dict(con.execute("SELECT path, status FROM files").fetchall())
    finally:
        con.close()
    assert status == {"a.txt": "done", "b.txt": "pending"}  # not left "running", not "failed"
    assert (out / "a.txt.summary.md").read_text(encoding="utf-8").startswith("# Summary of a.txt")
    # the queue and its lock file stay; nothing half-written is left
    kept = (DB_NAME, LOCK_NAME)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(kept)) == ["All summaries.md", "a.txt.summary.md"]
    # the file of every summary says the one left for the next run
    assert "- b.txt: not summarized yet" in (out / "All summaries.md").read_text(encoding="utf-8")


def test_run_sh_reads_documents_from_where_it_was_started_and_advises_itself(tmp_path: Path) -> None:
    """``~/workstation/run.sh summarize report.txt`` from another folder reads that folder's
    file (run.sh used to change into the checkout first), and advice names the command as it
    was typed, so pasting it back into the same terminal works (``workstation`` alone is not on
    the PATH after set-up)."""
    docs = tmp_path / "Documents"
    docs.mkdir()
    (docs / "note.txt").write_text("The canteen closes at two on Fridays from March.\n", encoding="utf-8")  # (short: read quickly)
    typed = os.path.relpath(ROOT / "run.sh", docs)  # e.g. ../../../work/main/run.sh
    env = {k: v for k, v in os.environ.items() if k != "WORKSTATION_COMMAND"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([typed, *args], cwd=docs, env=env, capture_output=True, text=True, timeout=300)

    done = run("summarize", "note.txt", "--json", "--quiet", "--max-tokens", "16")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (docs / result["source"]).resolve() == (docs / "note.txt").resolve() and result["summary"].strip()

    missing = run("models", "inspect", "no-such-model")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    advice = re.search(r"run '([^']+)' to see what is installed", missing.stderr)
    assert advice and advice.group(1) == f"{typed} models list", missing.stderr
    pasted = subprocess.run(advice.group(1).split(), cwd=docs, env=env, capture_output=True, text=True, timeout=300)
    assert pasted.returncode == 0 and "smollm2-135m-instruct-q4_1" in pasted.stdout, pasted.stderr
    assert f"({typed} models pull NAME)" in pasted.stdout.replace("'", "")


def test_show_and_chat_c_suggest_the_same_conversation(capsys: pytest.CaptureFixture[str]) -> None:
    """`conversations show "ışık faturası"` suggested "IŞIK FATURASI ÖDENDİ Mİ?" (the closest
    string) and `chat -c "ışık faturası"` "ışık faturası için hatırlatma yaz" (a title that
    starts with the words): one lookup now, a title starting with the words as written first."""
    from workstation.core.store import ConversationStore

    store = ConversationStore()
    store.new("ışık faturası için hatırlatma yaz")
    store.new("IŞIK FATURASI ÖDENDİ Mİ?")  # the newer, and the closer as a string
    store.new("Su faturası")
    store.close()
    meant = 'did you mean "ışık faturası için hatırlatma yaz"?'
    assert main(["conversations", "show", "ışık faturası"]) == 1
    assert meant in capsys.readouterr().err.lower()
    assert main(["chat", "--max-tokens", "1", "-c", "ışık faturası", "Hi"]) == 1
    assert meant in capsys.readouterr().err
    assert main(["conversations", "show", "isik faturasi odendi"]) == 1  # typed without Turkish letters
    assert 'Did you mean "IŞIK FATURASI ÖDENDİ Mİ?"' in capsys.readouterr().err


def test_chat_c_refuses_a_likely_typo_and_conversations_lists_the_names(
        smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped ``-c`` name used to start an empty conversation silently, and the question
    about a summarized document was answered without it."""
    from workstation.core.store import ConversationStore

    assert main(["conversations"]) == 0
    assert "No saved conversations yet" in capsys.readouterr().out
    store = ConversationStore()
    budget = store.new("Budget notes")
    store.add_message(budget.id, "user", "The budget for 2027 is 40,000 euros.")
    store.add_message(budget.id, "assistant", "Noted.")
    store.new("İş Planı")
    store.new("Write a short e-mail to my colleague asking to move the meeting")  # a title the app gave
    store.close()
    chat = ["chat", "--max-tokens", "2", "--temperature", "0"]
    # a typo in a long title's first words (only a whole title was compared: it began a new one)
    assert main([*chat, "-c", "Write a short e-mal", "Hi"]) == 1
    assert ('no conversation named "Write a short e-mal"; did you mean "Write a short e-mail to my colleague'
            in capsys.readouterr().err)
    assert main(["conversations", "show", "wrte a short"]) == 1  # (one mechanism)
    assert 'Did you mean "Write a short e-mail to my colleague' in capsys.readouterr().err
    assert main([*chat, "-c", "Write a long e-mail", "Hi"]) == 0  # a word other than the title's: another name
    assert 'Started a new conversation "Write a long e-mail"' in capsys.readouterr().err

    assert main([*chat, "-c", "Budget note", "How much?"]) == 1
    err = capsys.readouterr().err
    assert 'There is no conversation named "Budget note"; did you mean "Budget notes"? Add --new' in err
    assert main([*chat, "-c", "budget", "How much?"]) == 1  # a saved name's first word (it began another)
    assert 'There is no conversation named "budget"; did you mean "Budget notes"? Add --new' in capsys.readouterr().err
    # in Turkish without a suffix that must agree with the name's last vowel ("Budget notes" mı read wrong)
    assert main([*chat, "-c", "budget", "--lang", "tr", "How much?"]) == 1
    assert '"budget" adında bir sohbet yok; bunu mu demek istediniz: "Budget notes"? ' in capsys.readouterr().err
    # a bare number, as the list shows #1: that one continued (it said 'did you mean "#1"'), not a new "1" begun
    assert main([*chat, "-c", str(budget.id), "How much?"]) == 0
    assert "Started a new conversation" not in capsys.readouterr().err
    assert main([*chat, "-c", "budget NOTES", "How much?"]) == 0  # the same name, case aside
    assert "Started a new conversation" not in capsys.readouterr().err
    assert main([*chat, "-c", "İŞ PLANI", "Hi"]) == 0  # Turkish capitals: casefold() made İ "i̇"
    assert "Started a new conversation" not in capsys.readouterr().err
    assert main([*chat, "-c", "Budget note", "--new", "Hello"]) == 0
    assert 'Started a new conversation "Budget note"' in capsys.readouterr().err
    # a numbered series is no typo: "Budget note 2" beside "Budget note" starts its own
    assert main([*chat, "-c", "Budget note 2", "Hello"]) == 0
    assert 'Started a new conversation "Budget note 2"' in capsys.readouterr().err
    assert main([*chat, "-c", "Budget note-3", "Hello"]) == 0
    assert 'Started a new conversation "Budget note-3"' in capsys.readouterr().err

    assert main(["conversations", "--json"]) == 0
    listed = {c["title"]: c["messages"] for c in json.loads(capsys.readouterr().out)["conversations"]}
    assert listed == {"Budget notes": 6, "İş Planı": 2, "Budget note": 2, "Budget note 2": 2, "Budget note-3": 2,
                      "Write a long e-mail": 2, "Write a short e-mail to my colleague asking to move the meeting": 0}
    assert main(["conversations"]) == 0
    width = len("Write a short e-mail to my colleague asking to move the meeting")  # (the longest name sets it)
    assert f"| {'Budget notes':<{width}} |        6 |" in capsys.readouterr().out


def test_chat_c_with_one_new_name_started_together_makes_one_conversation(tmp_path: Path, smollm2_path: Path) -> None:
    """`for i in 1 2 3; do chat -c "Parallel test" …& done` made three conversations of that
    name (each looked, found none and made one once its model had loaded)."""
    from workstation.core.store import ConversationStore

    prof = str(_profile_file(tmp_path, max_tokens=2))
    runs = [subprocess.Popen([sys.executable, "-m", "workstation.cli", "chat", "-p", prof, "-c", "Parallel test",
                              f"Say the number {i}."], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True) for i in range(3)]
    said = [run.communicate(timeout=180)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], said
    store = ConversationStore()
    try:
        named = [c for c in store.list() if c.title == "Parallel test"]
        assert len(named) == 1 and len(store.messages(named[0].id)) == 6, said
    finally:
        store.close()
    assert sum("Started a new conversation" in s for s in said) == 1, said


def test_chat_reads_a_pipe_without_dash(tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`cat report.txt | workstation chat` said "needs text": only `chat -` read the pipe. A long
    message is read in parts of 512 tokens, and how far shows on stderr until the reply begins
    (on a CPU a contract took a minute with nothing on the screen)."""
    report = "".join(f"Line {i}: the quarterly report lists desks, chairs and lamps.\n" for i in range(38))
    with _stdin_piped(monkeypatch, (report + "Which line lists lamps first?").encode()):
        assert main(["chat", "-p", str(_profile_file(tmp_path, max_tokens=3))]) == 0
    out, err = capsys.readouterr()
    assert out.strip(), err
    found = FIGURES.search(err)  # the turn ran on what the pipe said
    figures = _figures(err)
    assert found and figures and figures[3] > 512, err
    read = re.findall(r"\] +(\d+)%  reading your message: (\d+) of ([\d,]+) tokens  ETA", err)
    assert read == [(str(round(512 / figures[3] * 100)), "512", f"{int(figures[3]):,}")], err
    assert err.index("reading your message") < found.start()


def test_chat_reads_a_pipe_in_the_encoding_of_a_text_file_and_refuses_a_document(
    tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`chat < mektup.txt`, a Turkish letter saved in Windows-1254 (summarize read it), ended in
    "unexpected error: UnicodeEncodeError"; so did a Word file or a picture through the pipe."""
    import io

    prof = str(_profile_file(tmp_path, max_tokens=2))
    letter = "Toplantı yarın sabah şirkette; İstanbul ofisi de katılıyor.".encode("cp1254")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(letter)))
    assert main(["chat", "-p", prof, "--json", "-"]) == 0
    said = json.loads(capsys.readouterr().out)["metrics"]
    assert said["prompt_n"] > 15  # the letter, read
    for data in (b"PK\x03\x04\x14\x00" + bytes(range(256)) * 4, b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4):  # Word, JPEG
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        assert main(["chat", "-p", prof, "-"]) == 1
        err = capsys.readouterr().err
        assert "What came through the pipe is not text (a Word or PDF document, a picture?)" in err, err
        assert "summarize FILE -c NAME" in err and "Traceback" not in err and "unexpected" not in err


@pytest.mark.parametrize("args,sentence", [
    (["sumarize", "notes.txt"], "There is no command 'sumarize'; did you mean 'summarize'? ('workstation --help' lists them)."),
    (["models", "pul", "x"], "There is no command 'models pul'; did you mean 'models pull'?"),
    (["chat", "--temperature", "hot", "hi"], "--temperature must be a number, not 'hot' (see 'workstation chat --help')."),
    (["chat"], "'workstation chat' needs text (see 'workstation chat --help')."),
    (["models", "list", "--jsn"], "--jsn is not an option of 'workstation models list'; did you mean '--json'?"),
    # an option of another command: where it belongs, never the same string back as a guess
    (["--measure"], "--measure is not an option of 'workstation'; did you mean 'workstation size --measure'?"),
    (["models", "inspect", "-p", "office-cpu"],
     "-p is not an option of 'workstation models inspect'; it takes MODEL, --json, --layers and --lang (see "
     "'workstation models inspect --help')."),
    # what a command takes is its options too: "it takes WORKLOAD" of size read as if it took nothing else
    (["size", "--bogus"], "--bogus is not an option of 'workstation size'; it takes WORKLOAD, --people, --json, "
                          "--output, --top, --measure … (see 'workstation size --help')."),
    (["profiles", "check", "office-cpu", "-p", "long-documents"],
     "PROFILE: 'office-cpu' and -p 'long-documents' name two profiles; give one"),
    (["usage", "--by", "persn"], "--by cannot be 'persn'; did you mean 'person'?"),
    (["models", "quantize", "x"], "'workstation models quantize' needs --type"),  # typed back as it is
    (["keys", "revoke"], "'workstation keys revoke' needs name"),
    (["cache", "lst"], "There is no command 'cache lst'; did you mean 'cache list'?"),
    (["chat", "--new", "hi"], "--new starts a saved conversation and goes with -c NAME; without -c nothing is kept."),
    # ... in the command's language (both were English on a Turkish PC)
    (["chat", "--lang", "tr"], "'workstation chat' bir metin ister (ayrıntılar: 'workstation chat --help')."),
    (["chat", "--lang", "tr", "--new", "hi"], "--new kaydedilen yeni bir sohbet başlatır ve -c İSİM ile birlikte "
                                              "kullanılır; -c olmadan hiçbir şey saklanmaz."),
    (["--no-load", "fit"], "'fit' is a command of its own: type it first, as 'workstation fit …' (the options "
                           "before a command go to 'workstation tui')."),
    # argparse's own mistakes in the language of --lang, anywhere in the line (they were English under it)
    # (every command takes --lang now, audit last: the app's own --no-load before it is the mistake)
    (["--lang", "tr", "--no-load", "audit"], "'audit' ayrı bir komut: onu en başa yazın, 'workstation audit …' gibi "
                                             "(bir komuttan önce yazılan seçenekler 'workstation tui' içindir)."),
    (["chat", "--temperature", "abc", "--lang", "tr"], "--temperature bir sayı olmalı, 'abc' değil (ayrıntılar: "
                                                       "'workstation chat --help')."),
    # (a sentence ends on its question, not on "? (...)."; "aldığı" alone read as the option's)
    (["profiles", "chek", "--lang", "tr"], "'profiles chek' diye bir komut yok; bunu mu demek istediniz: 'profiles "
                                           "check'? Komutları 'workstation profiles --help' listeler."),
    (["summarize", "--lang=tr"], "'workstation summarize' için şu eksik: DOSYA (ayrıntılar: 'workstation summarize --help')."),
    (["chat", "--lang", "tr", "--bogus"], "--bogus, 'workstation chat' komutunun bir seçeneği değil; komutun aldığı: METİN, "),
    (["models", "pull", "a", "b", "--lang", "tr"], "'b' fazladan yazılmış: 'workstation models pull' komutunun aldığı "
                                                   "yalnızca KAYNAK; boşluk içeren bir metni tırnak içine alın"),
    (["usage", "--lang", "tr", "--by", "persn"], "--by 'persn' olamaz; bunu mu demek istediniz: 'person'?"),
    (["chat", "--lang", "tr", "--temperature"], "--temperature bir değer ister: onu hemen ardından yazın"),
    (["chat", "--lang", "tr", "--t", "1", "hi"], "--t birden çok seçeneğe uyuyor (--temperature, --top-p, --top-k)"),
    (["hw", "--lang", "tr", "--max-tokens", "5"], "--max-tokens şu komutların seçeneği: batch, bench, chat ve summarize"),
    (["profiles", "chek", "--lang", "tr", "--json"], "There is no command 'profiles chek'"),  # a script's: English
    # another command's option after a command (read by that command's parser alone first)
    (["hw", "--gpu", "rtx"], "--gpu rtx is not an option of 'workstation hw'; did you mean 'workstation fit --gpu'?"),
    # ... before a close spelling of the command's own (--gpu: fit's, not a misspelt --output)
    (["summarize", "notes.txt", "--gpu", "rtx"], "--gpu rtx is not an option of 'workstation summarize'; did you "
                                                 "mean 'workstation fit --gpu'?"),
    # an option of several other commands: all named (it named the one owner only, and said nothing for two)
    (["hw", "--max-tokens", "5"], "--max-tokens 5 is not an option of 'workstation hw'; --max-tokens is an option of "
                                  "batch, bench, chat and summarize (see"),
    # ... where the command takes a text too, as one other command's option is named there (it said "it takes TEXT")
    (["models", "inspect", "--max-tokens", "5", "x"], "--max-tokens is not an option of 'workstation models inspect'; "
                                                     "--max-tokens is an option of batch, bench, chat and summarize"),
    # ... five of them too (the limit was four owners: -o/--output's five went unsaid); -p of ten, no list
    (["hw", "-o", "x"], "-o x is not an option of 'workstation hw'; -o is an option of batch, conversations export, "
                        "models quantize, size and summarize (see"),
    (["hw", "-p", "a"], "-p a is not an option of 'workstation hw' (see"),
    # the misspelt option alone: its value went as the text, the word after it is not the option's
    (["chat", "--temprature", "1", "hi"], "--temprature is not an option of 'workstation chat'; did you mean "
                                         "'--temperature'?"),
    # two options of another command: the first with its value, not both as one ("--gpu rtx --temprature 1")
    (["hw", "--gpu", "rtx", "--temprature", "1"], "--gpu rtx is not an option of 'workstation hw'; did you mean "
                                                 "'workstation fit --gpu'?"),
    # a word too many is no option ("x is not an option of 'workstation hw'")
    (["hw", "--json", "x"], "'x' was not expected: 'workstation hw' takes options only (see 'workstation hw --help')."),
    (["chat", "Hello", "there"], "'there' is more than 'workstation chat' takes (TEXT); a text with spaces goes in quotes"),
    # a command's Turkish word is said as the command (it had no guess, and after --lang tr it was
    # "'özetle belge.docx' beklenmiyordu: 'workstation tui' yalnızca seçenek alır")
    (["özetle", "belge.docx"], "There is no command 'özetle'; did you mean 'summarize'? ('workstation --help' lists them)."),
    (["--lang", "tr", "özetle", "belge.docx"], "'özetle' diye bir komut yok; bunu mu demek istediniz: 'summarize'? "
                                               "Komutları 'workstation --help' listeler."),
    (["Sohbetler", "--lang", "tr"], "'Sohbetler' diye bir komut yok; bunu mu demek istediniz: 'conversations'?"),
    (["--lang=tr", "sigar", "mi", "x.gguf"], "'sigar mi' diye bir komut yok; bunu mu demek istediniz: 'fit'?"),
    (["KULLANIM"], "There is no command 'KULLANIM'; did you mean 'usage'?"),
    # ... and a misspelt one after the app's options too
    (["--lang", "tr", "sumarize", "x"], "'sumarize' diye bir komut yok; bunu mu demek istediniz: 'summarize'?"),
])
def test_a_command_line_mistake_is_one_sentence(args: list[str], sentence: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("workstation: ") and sentence in err, err


def test_argparse_messages_of_other_pythons_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse's messages are read by its format strings; Python 3.14's invalid choice with its own
    guess (suggest_on_error, on by default from 3.15) was said as argparse wrote it, in English under
    --lang tr ("Command: invalid choice: 'summarise', maybe you meant ..."); one unknown to us still is."""
    from workstation.cli import build_parser
    from workstation.commands.parser import CommandParser

    parser = build_parser()
    assert isinstance(parser, CommandParser)
    monkeypatch.setattr(CommandParser, "line", ["summarise", "--lang", "tr"])
    choices = "'tui', 'chat', 'summarize'"
    plain = parser.sentence(f"argument COMMAND: invalid choice: 'summarise' (choose from {choices})")
    assert plain.startswith("'summarise' diye bir komut yok; bunu mu demek istediniz: 'summarize'?"), plain
    assert parser.sentence(f"argument COMMAND: invalid choice: 'summarise', maybe you meant 'summarize'? "
                           f"(choose from {choices})") == plain
    assert parser.sentence("argument --x: a message of a later Python").startswith("--x: a message of a later Python")
    # an option of nargs=1 is said as one value, as argparse says it ("expected 1 arguments" in English)
    monkeypatch.setattr(CommandParser, "line", ["fit"])
    assert parser.sentence("argument --x: expected 1 argument").startswith("--x: expected one argument (see ")
    assert parser.sentence("argument --x: expected 2 arguments").startswith("--x: expected 2 arguments (see ")


def test_a_command_imports_its_own_module_only() -> None:
    """Each command imported all seventeen commands' modules (the engine's, the server's, the
    summarizer's) to build the whole command line's parser: a third of a second before any began."""
    code = ("import sys; from workstation.cli import main; main(['conversations', '--json']); "
            "print(sorted(m for m in sys.modules if m.startswith('workstation.commands.')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = done.stderr.strip().splitlines()[-1]
    assert "workstation.commands.conversations" in loaded and "workstation.commands.serve" not in loaded, loaded
    assert "workstation.commands.summarize" not in loaded


@pytest.mark.parametrize("group,said", [(["profiles"], "office-cpu"), (["keys"], "No keys yet"),
                                        (["cache"], "saved states, "), (["audit"], "audit trail"),
                                        (["models"], "Installed in")])
def test_a_command_group_alone_does_its_usual_verb(group: list[str], said: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`models` alone listed the models, while `profiles`, `keys` and `cache` alone said "needs
    VERB" (exit 2): each lists now, and `audit` alone verifies (its one verb). With that verb's
    options: `audit --json`, which the README shows, said "--json is not an option"."""
    assert main(group) == 0
    assert said in capsys.readouterr().out
    assert main([*group, "--json"]) == 0
    alone = capsys.readouterr().out
    assert main([*group, VERB[group[0]], "--json"]) == 0
    # (the memory free, in a profile's fit, may change between the two: 22.2 GB, then 22.1)
    assert json.loads(re.sub(r"[\d.]+ GB", "N GB", alone)) == json.loads(re.sub(r"[\d.]+ GB", "N GB", capsys.readouterr().out))


VERB = {"profiles": "list", "keys": "list", "cache": "list", "audit": "verify", "models": "list"}


def test_an_option_before_the_verb_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the options of the usual verb on the group too, the verb's own defaults wrote over
    them: `audit --dir D verify` checked the default folder, `models --json inspect` printed text."""
    assert main(["audit", "--dir", str(tmp_path), "verify"]) == 0
    assert f"No audit trail in {tmp_path} yet." in capsys.readouterr().out
    for args in (["models", "--json", "inspect", "smollm2-135m-instruct-q4_1"], ["keys", "--json", "list"],
                 ["profiles", "--json", "check", "office-cpu"]):
        assert main(args) == 0
        assert json.loads(capsys.readouterr().out), args
    assert main(["keys", "list"]) == 0 and not capsys.readouterr().out.startswith("{")  # no option: its default


@pytest.mark.parametrize("args", [["-p", "office-cpu", "profiles", "check"], ["profiles", "check", "-p", "office-cpu"],
                                  ["profiles", "check", "office-cpu"], ["profiles", "check"]])
def test_profiles_check_takes_the_profile_as_every_command_does(args: list[str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`./run.sh -p P profiles check` said "needs profile": -p was taken for the app, and
    check wanted its name after it only. Alone (as README writes it) it said "needs PROFILE",
    where every other command takes the default profile."""
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "Office CPU — SmolLM2 135M"
    assert main(args) == 0  # the text has what --json has of a turn: its sampling and system prompt
    out = capsys.readouterr().out
    assert "  sampling         temperature 0.7, top_p 0.95, top_k 40" in out
    assert "  parallel         1 (serve: 4)" in out
    assert "  model            smollm2-135m-instruct-q4_1\n" in out  # as 'models list' names it, its file below
    assert '  system_prompt    "You are a helpful assistant for office work.' in out
    # what the file leaves to the machine says so (threads 2 read as the file's own)
    assert re.search(r"^  threads +\d+ \(auto: chosen for this machine\)$", out, re.M), out


def test_the_apps_own_options_need_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    """`./run.sh --lang tr` said "There is no command 'tr'": the app is the default command, so
    its options work without 'tui' before them; a command's own options still need the command."""
    from workstation.cli import _starts_the_tui, build_parser

    parser = build_parser()
    for argv in (["--lang", "tr"], ["-p", "office-cpu", "--no-load"], ["--profile=office-cpu", "--lang=en"]):
        assert _starts_the_tui(parser, argv), argv
    for argv in (["--help"], ["chat", "--lang", "tr"], ["-p", "office-cpu", "chat", "hi"], ["--measure"], []):
        assert not _starts_the_tui(parser, argv), argv
    # the language before a command that takes one is that command's (`--lang tr bench --quick` was refused)
    from workstation.cli import _parsed

    for argv in (["--lang", "tr", "bench", "--quick"], ["--lang=tr", "models", "list"]):
        args = _parsed(argv)
        assert (args.command, args.lang) == (argv[-2], "tr"), (argv, args)
    # --help before a command is the whole command line's (`--lang tr --help` was tui's), in --lang's language:
    # argparse's headings, the commands' lines and the environment's too (they were English)
    with pytest.raises(SystemExit) as stopped:
        main(["--lang", "tr", "--help"])
    said = capsys.readouterr().out
    assert stopped.value.code == 0 and said.startswith("kullanım: ") and "interface language" not in said, said
    for line in ("\nseçenekler:\n", "  -h, --help            bu yardımı göster ve çık\n",
                 "    tui                 terminaldeki sohbet uygulaması (varsayılan komut)\n",
                 "\n  WORKSTATION_DATA        veri klasörü: sohbetler,"):
        assert line in said, line
    with pytest.raises(SystemExit):  # a command's too, --lang after --help
        main(["summarize", "--help", "--lang", "tr"])
    said = capsys.readouterr().out
    assert said.startswith("kullanım: ") and "  DOSYA                 özetlenecek belgeler\n" in said, said
    with pytest.raises(SystemExit):  # what an IT person sets once per PC is in --help, not only the README
        main(["--help"])
    said = capsys.readouterr().out
    for variable in ("WORKSTATION_DATA", "WORKSTATION_PROFILE ", "WORKSTATION_PROFILES", "WORKSTATION_MODELS",
                     "WORKSTATION_MODEL_DIRS", "WORKSTATION_API_KEY", "WORKSTATION_ALLOW_ROOT"):
        assert f"\n  {variable}" in said, variable
    # each command's line names what README says it does (profiles new, models remove, and the
    # cache's documents and serve's prompts were missing)
    words = " ".join(said.split())
    for line in ("models list, inspect, add, download, quantize and remove models",
                 "profiles list and check profiles; new MODEL makes one for an installed model",
                 "cache the KV caches kept on disk (conversations, documents, serve's long prompts)",
                 # the kinds of document, as Ctrl+O, Ctrl+P and F1 list them (CSV was left out, and it is read)
                 "summarize documents longer than the context (text, Word (.docx), PDF, Excel (.xlsx), CSV, "
                 "PowerPoint (.pptx), e-mail (.eml) and web page)"):
        assert line in words, line


def test_batch_status_lists_documents_added_since_the_last_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`batch DIR --status` showed the queue as the last run left it; a document added since
    was missing although the next run takes it. It shows the queue the next run will see."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.txt").write_text("The first note.", encoding="utf-8")
    assert main(["batch", str(inbox), "--status"]) == 0
    assert "waiting  a.txt" in capsys.readouterr().out
    (inbox / "b.txt").write_text("A note added later.", encoding="utf-8")
    assert main(["batch", str(inbox), "--status"]) == 0
    out = capsys.readouterr().out
    assert "waiting  a.txt" in out and "waiting  b.txt" in out and "2 waiting" in out, out


def test_batch_and_summarize_name_a_wrong_path_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`batch nofolder` said "'nofolder' is not a folder." where `summarize nofolder` said where
    it was looked for; a document given to batch now gets the command that summarizes it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "minutes.txt").write_text("The canteen closes at two.", encoding="utf-8")
    (tmp_path / "inbox").mkdir()
    said: dict[tuple[str, str], str] = {}
    for command in ("batch", "summarize"):
        for name in ("nofolder", "minutes.txt", "inbox"):
            if (command, name) in {("batch", "inbox"), ("summarize", "minutes.txt")}:
                continue  # what each is for
            assert main([command, name, "--status"] if command == "batch" else [command, name]) == 1
            said[command, name] = capsys.readouterr().err.strip()
    assert said["batch", "nofolder"] == said["summarize", "nofolder"] == f"workstation: 'nofolder' does not exist in {tmp_path}."
    # a typo gets the file (folder) of that folder it most likely means, as command and profile typos do
    assert main(["summarize", "minuts.txt"]) == 1
    assert capsys.readouterr().err.strip() == (f"workstation: 'minuts.txt' does not exist in {tmp_path}. "
                                               "Did you mean 'minutes.txt'?")
    assert main(["summarize", str(tmp_path / "minute.txt")]) == 1  # (with its folder, as it was typed)
    assert capsys.readouterr().err.strip().endswith(f"does not exist. Did you mean '{tmp_path / 'minutes.txt'}'?")
    assert main(["batch", "inbx", "--status"]) == 1
    assert capsys.readouterr().err.strip().endswith(f"'inbx' does not exist in {tmp_path}. Did you mean 'inbox'?")
    assert said["batch", "minutes.txt"].endswith("'minutes.txt' is a document, not a folder; 'workstation summarize minutes.txt' summarizes it.")
    (tmp_path / "photos.zip").write_bytes(b"PK\x03\x04")  # a file, but no document
    assert main(["batch", "photos.zip"]) == 1
    assert capsys.readouterr().err.strip() == "workstation: 'photos.zip' is a file, not a folder of documents."
    # (it said "'inbox' is a folder, not a document; 'workstation batch inbox' summarizes every document in it.")
    assert said["summarize", "inbox"].endswith(
        " inbox is a folder, not a document. To summarize every document in it, run: workstation batch inbox")


def test_an_output_file_that_would_lose_work_is_refused_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], smollm2_path: Path
) -> None:
    """`summarize copy.txt -o copy.txt` wrote the summary over the document it summarized, and
    `-o outdir/` (not made yet) wrote a file named outdir; `size -o reports/` the same."""
    prof = _profile_file(tmp_path, max_tokens=16)
    doc, other = tmp_path / "copy.txt", tmp_path / "notes.md"
    doc.write_text("The canteen closes at two.\n", encoding="utf-8")
    other.write_text("# Notes\n\nDesks by team.\n", encoding="utf-8")
    before = doc.read_bytes()
    for files, out, why in (
        ([doc], doc, "it is one of the files read, and would be replaced; give another file name"),
        ([other, doc], Path(os.path.relpath(doc)), "it is one of the files read, and would be replaced"),
        ([doc], f"{tmp_path / 'outdir'}/", "that is a folder; give a file name"),
    ):
        assert main(["summarize", *map(str, files), "-p", str(prof), "-o", str(out)]) == 1
        err = capsys.readouterr().err
        assert f"Cannot write {str(out).rstrip('/')}: {why}" in err and "Traceback" not in err, err
        assert err.count("\n") == 1 and "loading" not in err.lower()
    assert doc.read_bytes() == before and not (tmp_path / "outdir").exists()
    assert main(["size", "office-20", "-o", f"{tmp_path / 'reports'}/"]) == 1
    assert "that is a folder; give a file name" in capsys.readouterr().err
    assert not (tmp_path / "reports").exists() and not (tmp_path / "reports-charts").exists()


def test_an_output_named_through_a_link_or_a_pipe_is_written_through_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-o link.md` replaced the link with a plain file (the file it names kept the old text),
    and `-o` a pipe or a device (/dev/stdout, /dev/full as root) replaced it with a file."""
    real, link, pipe = tmp_path / "real.md", tmp_path / "link.md", tmp_path / "pipe.md"
    real.write_text("old\n", encoding="utf-8")
    link.symlink_to(real.name)
    os.mkfifo(pipe)
    # office-20 over one model and one card: sizing the whole table (2 s of CPU a run) is no
    # part of where the report is written
    workload = workload_file(tmp_path, candidates={"models": ["gemma-2-9b-it-q4_k_m"], "gpus": ["RTX 4060"]})
    assert main(["size", str(workload), "-o", str(link)]) == 0
    assert link.is_symlink() and real.read_text(encoding="utf-8").startswith("# Sizing: Office of 20")
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(pipe.read_bytes()), daemon=True)
    reader.start()
    assert main(["size", str(workload), "-o", str(pipe)]) == 0
    reader.join(timeout=30)
    assert read and read[0].startswith(b"# Sizing: Office of 20") and pipe.is_fifo()
    capsys.readouterr()
    # -o /dev/stdout into `>> log.md`: appended through the shell's descriptor (realpath named
    # log.md, replaced with the report alone; into a pipe it named no file at all)
    log = tmp_path / "log.md"
    log.write_text("old line\n", encoding="utf-8")
    with open(log, "ab") as appended:
        done = subprocess.run([sys.executable, "-m", "workstation.cli", "size", str(workload), "-o", "/dev/stdout"],
                              stdout=appended, stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    kept = log.read_text(encoding="utf-8")
    assert kept.startswith("old line\n") and "# Sizing: Office of 20" in kept
    assert (tmp_path / "stdout-charts" / "people.png").is_file()  # its charts where it was run, not in /dev


def test_a_data_folder_that_cannot_be_one_is_said_in_a_sentence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """WORKSTATION_DATA naming a file said "unexpected error: FileExistsError: [Errno 17]…"."""
    taken = tmp_path / "notes.txt"
    taken.write_text("mine\n", encoding="utf-8")
    for data, why in ((taken, f"{taken} is a file, not a folder"), (taken / "sub", f"{taken} is a file, not a folder"),
                      (Path("/proc/workstation-data"), "the folder /proc does not take new files")):
        monkeypatch.setenv("WORKSTATION_DATA", str(data))
        assert main(["conversations"]) == 1
        err = capsys.readouterr().err
        assert err == f"workstation: The data folder {data}, where conversations and measurements are kept, " \
                      f"cannot be used: {why}; set WORKSTATION_DATA to a folder you can write in.\n"
    assert taken.read_text(encoding="utf-8") == "mine\n"


def test_chat_c_goes_on_with_the_conversations_own_profile(
        smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`chat -c NAME` without -p ran a saved conversation on the default profile, unsaid (a desk
    PC's conversation with the office server went on with the local model)."""
    from workstation.core.store import ConversationStore

    store = ConversationStore()
    quotes = store.new("Quotes", profile="quoting-lookup")
    gone = store.new("Old one", profile="no-such-profile")
    store.close()
    chat = ["chat", "--max-tokens", "2", "--temperature", "0", "--json"]

    assert main([*chat, "-c", "Quotes", "Hello"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["profile"] == "quoting-lookup"
    assert "Continuing with quoting-lookup, this conversation's profile (-p chooses another)." in err
    assert main([*chat, "-p", "office-cpu", "-c", "Quotes", "Hello"]) == 0  # -p: that one, kept from now on
    out, err = capsys.readouterr()
    assert json.loads(out)["profile"] == "office-cpu"
    assert "Continuing with office-cpu (this conversation was with quoting-lookup)." in err
    assert main([*chat, "-c", "Quotes", "Hello"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["profile"] == "office-cpu" and "Continuing" not in err
    assert main([*chat, "-c", "Old one", "Hello"]) == 0  # its profile is gone: the default, said
    out, err = capsys.readouterr()
    assert json.loads(out)["profile"] == "office-cpu"
    assert "This conversation was with no-such-profile, which cannot be used now (" in err
    store = ConversationStore()
    try:
        assert store.get(quotes.id, with_messages=False).profile == "office-cpu"
        # each reply keeps the profile it ran on (F5 plots one profile's turns at a time)
        assert [(m.metrics or {}).get("profile") for m in store.messages(quotes.id) if m.role == "assistant"] \
            == ["quoting-lookup", "office-cpu", "office-cpu"]
        assert store.get(gone.id, with_messages=False).profile == "no-such-profile"
    finally:
        store.close()


def test_chat_c_finds_a_profile_given_as_a_path_again(
        tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A desk PC's conversation begun with `-p ~/desk.yaml` was kept by the name 'desk' alone,
    which `chat -c` could not find again: it went on with the local model."""
    _profile_file(tmp_path, max_tokens=2).rename(tmp_path / "desk.yaml")
    chat = ["chat", "--temperature", "0", "--json", "-c", "Memo"]
    monkeypatch.chdir(tmp_path)
    assert main([*chat, "-p", "desk.yaml", "Hello"]) == 0  # typed as a name in its folder
    assert json.loads(capsys.readouterr().out)["profile"] == "desk"
    monkeypatch.chdir(smollm2_path.parent)  # elsewhere, later
    assert main([*chat, "Hello again"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["profile"] == "desk" and "cannot be used now" not in err, err
    assert "Continuing with desk, this conversation's profile" in err


def test_chat_c_whose_model_cannot_load_leaves_the_conversation_as_it_was(
        tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A `chat -c` whose profile's model was not there saved the question with no answer and made
    that profile the conversation's: each retry failed again and added the question once more,
    and the model later read them all. A turn that never began now changes nothing."""
    from workstation.core.store import ConversationStore

    good = _profile_file(tmp_path, max_tokens=2)
    broken = tmp_path / "broken.yaml"
    data = yaml.safe_load(good.read_text(encoding="utf-8"))
    broken.write_text(yaml.safe_dump({**data, "model": str(tmp_path / "moved.gguf")}), encoding="utf-8")
    chat = ["chat", "--temperature", "0", "-c", "Offer"]
    assert main([*chat, "-p", str(good), "Hello"]) == 0
    capsys.readouterr()
    store = ConversationStore()
    try:
        (conv,) = [c for c in store.list() if c.title == "Offer"]
        before = ([m.content for m in store.messages(conv.id)], store.get(conv.id, with_messages=False).profile)
        assert main([*chat, "-p", str(broken), "Draft the offer letter"]) == 1
        assert "moved.gguf" in capsys.readouterr().err
        assert main([*chat, "Draft the offer letter"]) == 0  # its own profile again, not the broken one
        after = [m.content for m in store.messages(conv.id)]
        assert after[:2] == before[0] and after[2] == "Draft the offer letter" and len(after) == 4
        assert store.get(conv.id, with_messages=False).profile == before[1]
        # a new conversation whose model cannot load is not made
        assert main(["chat", "-p", str(broken), "-c", "Never", "Hi"]) == 1
        err = capsys.readouterr().err
        assert "Started a new conversation" not in err
        assert [c.title for c in store.list()] == ["Offer"]
    finally:
        store.close()


def test_conversations_write_a_profile_in_the_home_folder_with_a_tilde(capsys: pytest.CaptureFixture[str]) -> None:
    """A desk profile's whole path (/home/ayse/Downloads/desk.yaml) made the table too wide for
    an 80-column terminal; ~ says the same in less (the JSON keeps the whole path)."""
    from workstation.core.store import ConversationStore

    desk = str(Path.home() / "Downloads" / "desk.yaml")
    store = ConversationStore()
    store.new("Offer letter", profile=desk)
    store.close()
    assert main(["conversations"]) == 0
    assert "| ~/Downloads/desk.yaml |" in capsys.readouterr().out
    assert main(["conversations", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["conversations"][0]["profile"] == desk


def test_every_option_of_every_command_says_what_it_does() -> None:
    """`cache --help` and `profiles --help` listed --json with no words beside it."""
    import argparse

    from workstation.cli import build_parser

    def silent(parser: argparse.ArgumentParser, path: str) -> Iterator[str]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from silent(sub, f"{path} {name}")
            elif action.option_strings and not action.help:
                yield f"{path} {'/'.join(action.option_strings)}"

    assert list(silent(build_parser(), "workstation")) == []


def test_every_commands_help_is_in_turkish_and_english_as_argparse_says_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--help` was English under Turkish. Every text it shows (argparse's headings, a command's
    description and epilog, an option's help) has its Turkish in the help file, so that a new
    option is not left English unnoticed (and none there is left over); English is argparse's own."""
    import argparse
    import re
    from gettext import gettext as _

    from workstation.cli import build_parser
    from workstation.commands.parser import CommandParser
    from workstation.core.locales import help_texts

    monkeypatch.setenv("WORKSTATION_COMMAND", "./run.sh")  # the command as the user typed it
    parsers = build_parser()._parsers()  # type: ignore[attr-defined]
    shown = {_("usage: ")}
    for parser in parsers:
        shown |= {parser.description, parser.epilog, *(g.title for g in parser._action_groups),
                  *(g.description for g in parser._action_groups)}
        for action in parser._actions:
            shown |= {action.help, *(choice.help for choice in getattr(action, "_choices_actions", []))}
    shown -= {None, "", argparse.SUPPRESS}
    turkish = help_texts("tr")
    # what is typed in a place, as the usage lines and the options' list name it (a positional's name
    # was English: "sırayla yazılanlar: name"): each positional's is in the help file, as are some options'
    formatter = argparse.HelpFormatter("x")
    places = {name: action.option_strings == [] for parser in parsers for action in parser._actions
              if action.nargs != 0 and not isinstance(action, argparse._SubParsersAction) and action.choices is None
              for name in formatter._metavar_formatter(action, action.dest if not action.option_strings
                                                       else action.dest.upper())(1)}
    places |= {"COMMAND": True, "VERB": True, "ACTION": True}  # (the commands' and verbs' places)
    places |= {name.upper(): True for name, positional in list(places.items()) if positional}  # (mistakes say them so)
    places |= {str(action.metavar): False for parser in parsers for action in parser._actions
               if action.option_strings and action.metavar}  # (--log-level LEVEL has choices)
    # every place, an option's too ("-s WORDS", "-o OUTDIR" within Turkish), has its word (N, K, A,B the same)
    assert sorted(name for name in places if name not in turkish) == []
    # and none is said in English within a Turkish text ("WORDS geçenler", "varsayılan DIR/summaries");
    # NAME=VALUE stays: a setting's name is its English one (kv_cache=q8_0), as the mistake says it
    english = sorted((name for name in places if name.isupper() and turkish[name] != name), key=len, reverse=True)
    in_english = re.compile(r"(?<![\w=])(" + "|".join(map(re.escape, english)) + r")(?![\w=])")
    assert sorted({found for text in turkish.values() for found in in_english.findall(text.replace("NAME=VALUE", ""))}) == []
    # a positional's name is one form: "şu eksik: isim, YENİ_İSİM" mixed them
    assert [name for name, positional in places.items() if positional and not turkish[name].isupper()] == []
    assert sorted(shown - set(turkish)) == [] and sorted(set(turkish) - shown - set(places)) == []
    fields = re.compile(r"%\(\w+\)s|%%")  # (argparse fills them in after: the same in both)
    assert [text for text in shown if fields.findall(text) != fields.findall(turkish[text])] == []
    # one word for one thing, as the app's Turkish says it: a document's parts are "bölüm" (summarize's
    # bars, F6), piped text comes "| ile" (chat's TEXT); "parça" stays only in "iş parçacığı" (threads)
    assert re.findall(r"\bparça(?!cı)\w*|\bboru\w*", " ".join(turkish.values())) == []
    import yaml

    said = yaml.safe_load((ROOT / "workstation" / "tui" / "locales" / "tr.yaml").read_text(encoding="utf-8"))
    commands = {key: text for key, text in said.items() if key.split(".")[0].endswith("_cmd")}
    assert [key for key, text in commands.items() if re.search(r"\bboru\w*", text)] == []  # (pipe_late said "borudan")
    # one placeholder in Turkish, as --help's usage lines and argparse's mistakes name it (hints said 'chat -c AD',
    # then 'keys add NAME' within a Turkish sentence)
    assert (said["cli.name"], said["cli.file"]) == (turkish["NAME"], turkish["FILE"]) == ("İSİM", "DOSYA")
    assert [key for key, text in said.items() if re.search(r"\b(AD|NAME|FILE)\b", text)
            and key != "binding.summarize.save.help"] == []
    monkeypatch.setattr(CommandParser, "line", ["--lang", "en"])
    assert [p.prog for p in parsers if p.format_help() != argparse.ArgumentParser.format_help(p)] == []
    summarize = next(p for p in parsers if p.prog == "./run.sh summarize")
    # the command as run, as every other hint names it (it said 'workstation chat -c NAME')
    assert '(./run.sh chat -c NAME "..."; the app' in " ".join(summarize.format_help().split())
    monkeypatch.setattr(CommandParser, "line", ["--lang", "tr"])
    assert [p.prog for p in parsers if not p.format_help().startswith("kullanım: ")] == []
    assert '(./run.sh chat -c İSİM "..."; uygulama' in " ".join(summarize.format_help().split())
    keys_add = next(p for p in parsers if p.prog == "./run.sh keys add")
    assert "yazılması gerekenler:\n  İSİM " in keys_add.format_help() and "[-p PROFİL]" in summarize.format_help()
    assert keys_add.sentence("the following arguments are required: name").startswith("'./run.sh keys add' için şu eksik: İSİM ")
    keys_rename = next(p for p in parsers if p.prog == "./run.sh keys rename")
    assert "şu eksik: İSİM, YENİ_İSİM " in keys_rename.sentence("the following arguments are required: name, NEW_NAME")
    for prog, typed in [("./run.sh conversations", "-s SÖZCÜKLER"), ("./run.sh batch", "-o ÇIKTI_KLASÖRÜ"),
                        ("./run.sh size", "-o RAPOR.md"), ("./run.sh serve", "--port PORT"),
                        ("./run.sh serve", "--shutdown-grace SANİYE"), ("./run.sh serve", "--log-level DÜZEY")]:
        assert typed in next(p for p in parsers if p.prog == prog).format_help(), (prog, typed)


def test_a_signal_ignored_by_nohup_stays_ignored() -> None:
    """`nohup workstation batch …` ignores SIGHUP; stopping on a closed terminal took it back,
    so the batch stopped when the terminal closed."""
    from workstation.commands.stopping import stop_signals

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_signals(lambda _sig: None):
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)  # (taken: it stops the work)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_model_whose_numbers_are_nan_says_so_instead_of_an_empty_reply(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file with NaN weights (its output norm here) loaded and answered nothing, exit 0: every
    token it 'chose' was <unk>. The tiny model itself answers, whatever it says: a prompt with
    characters its vocabulary spells in bytes ("é", the template's "<|") no longer aborts."""
    import struct

    sys.path.insert(0, str(Path(__file__).parent / "hostile"))
    import make_corpus

    def profile(model: Path) -> Path:
        path = tmp_path / f"{model.stem}.yaml"
        path.write_text(yaml.safe_dump({"name": model.stem, "model": str(model), "context": 128, "threads": 1,
                                        "sampling": {"max_tokens": 8, "temperature": 0}}), encoding="utf-8")
        return path

    valid = make_corpus.HERE / make_corpus.VALID
    assert main(["chat", "-p", str(profile(valid)), "--json", "Café?"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["predicted_n"] == 8

    data = bytearray(valid.read_bytes())
    lay = make_corpus.walk(bytes(data))
    (offset,) = struct.unpack_from("<Q", data, lay.tensors["output_norm.weight"]["offset"])
    for i in range(make_corpus.N_EMBD):
        struct.pack_into("<f", data, lay.data_start + offset + 4 * i, float("nan"))
    broken = tmp_path / "nan-weights.gguf"
    broken.write_bytes(bytes(data))
    assert main(["chat", "-p", str(profile(broken)), "Café?"]) == 1
    out, err = capsys.readouterr()
    assert not out.strip() and "Traceback" not in err
    assert "came out as NaN (not a number): its file is damaged" in err, err


def test_a_json_run_that_fails_says_why_in_json_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`chat --json` (any --json) that failed printed its sentence on stderr and nothing on
    stdout, so a script reading stdout as JSON read nothing; without --json, stdout stays empty."""
    missing = tmp_path / "gone.txt"
    assert main(["summarize", str(missing), "--json"]) == 1
    out, err = capsys.readouterr()
    said = err.strip().removeprefix("workstation: ")
    assert json.loads(out) == {"error": said, "exit_code": 1} and "gone.txt" in said
    assert main(["chat", "-p", "no-such-profile", "--json", "Hello"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {"error": err.strip().removeprefix("workstation: "), "exit_code": 1}
    assert "There is no profile named 'no-such-profile'" in out
    assert main(["chat", "-p", "no-such-profile", "Hello"]) == 1
    assert capsys.readouterr().out == ""
    # a name longer than a file's can be (it said "unexpected error: OSError: File name too long")
    assert main(["chat", "-p", "x" * 300, "Hello"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"workstation: There is no profile named '{'x' * 59}…'") and err.count("\n") == 1, err


def test_an_office_profiles_folder_adds_to_the_shipped_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """An office's shared profiles folder (WORKSTATION_PROFILES) with the server's profile alone:
    it replaced the shipped profiles, so a command without -p said "There is no profile named
    'office-cpu'" and the folder had to be a copy of profiles/ that no update reached. The
    shipped ones are listed too, the office's file winning by name; WORKSTATION_PROFILE names
    the one every command uses."""
    from workstation.core.profile_lookup import load_profile

    shared = tmp_path / "shared-profiles"
    shared.mkdir()
    office = (ROOT / "profiles" / "office-server.yaml").read_text(encoding="utf-8")
    (shared / "office-server.yaml").write_text(office.replace("127.0.0.1:8088", "office-pc:8088"), encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_PROFILES", str(shared))
    monkeypatch.delenv("WORKSTATION_PROFILE", raising=False)
    assert main(["profiles", "list", "--json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)["profiles"]}
    assert {"office-cpu", "long-documents", "office-server"} <= set(rows), rows
    assert rows["office-server"]["status"] == "remote: http://office-pc:8088/v1" and not rows["office-server"]["own"]
    # which come from the office's folder: marked (the listing did not say), in --json too
    assert rows["office-server"]["from"] == "office" and rows["office-cpu"]["from"] == "shipped"
    assert main(["profiles", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("office-server (the office's) ") for line in lines), lines
    assert not any("(the office's)" in line for line in lines if not line.startswith("office-server ")), lines
    assert load_profile(None).key == "office-cpu"  # the default, shipped: there
    monkeypatch.setenv("WORKSTATION_PROFILE", "offce-server")
    assert main(["profiles", "check"]) == 1
    err = capsys.readouterr().err
    assert "no profile named 'offce-server' (WORKSTATION_PROFILE names it)" in err and "Did you mean 'office-server'?" in err
    monkeypatch.setenv("WORKSTATION_PROFILE", "office-server")
    assert load_profile(None).remote.base_url == "http://office-pc:8088/v1"  # the office's, not the shipped file
    # a folder that is not there (a typo) left the office's profiles out without a word: said once
    monkeypatch.setenv("WORKSTATION_PROFILES", str(tmp_path / "shared-profles"))
    monkeypatch.delenv("WORKSTATION_PROFILE")
    assert main(["profiles", "list", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == (f"workstation: WORKSTATION_PROFILES names the folder {tmp_path / 'shared-profles'}, which is not "
                   "there (a typo?), so the office's profiles are not listed, only the shipped ones and your own; "
                   "set it to the folder that holds them.\n") and "office-cpu" in out, err
    # so is a shared drive's models folder (WORKSTATION_MODEL_DIRS): a typo listed its models as none
    monkeypatch.setenv("WORKSTATION_PROFILES", str(shared))
    monkeypatch.setenv("WORKSTATION_MODEL_DIRS", str(tmp_path / "shared-modles"))
    assert main(["models", "list", "--json"]) == 0
    assert capsys.readouterr().err == (f"workstation: WORKSTATION_MODEL_DIRS names the folder {tmp_path / 'shared-modles'}"
                                       ", which is not there (a typo?), so its models are not listed; set it to the "
                                       "folder that holds them (folders separated by ':').\n")
    assert main(["models", "list"]) == 0  # and not named as where the models here are, under that warning
    assert "shared-modles" not in capsys.readouterr().out
    # Windows separates them by ';' (':' is a drive's own there): read, and said, as this OS does
    monkeypatch.setattr(os, "pathsep", ";")
    monkeypatch.setenv("WORKSTATION_MODEL_DIRS", f"{shared};{tmp_path / 'shared-modles'}")
    assert main(["models", "list", "--json"]) == 0
    err = capsys.readouterr().err  # (the shared folder there is read; the typo alone is said)
    assert f"names the folder {tmp_path / 'shared-modles'}, which" in err and err.endswith("(folders separated by ';').\n")


@contextlib.contextmanager
def _stdin_piped(monkeypatch: pytest.MonkeyPatch, data: bytes) -> Iterator[None]:
    """This process's standard input a real pipe that brings ``data`` and ends, or, for b"",
    one held open with nothing in it (a script's own standard input): `chat` in this process
    reads it as it reads `… | workstation chat` (a process of its own cost a second of CPU)."""
    read, write = os.pipe()
    os.write(write, data)
    if data:
        os.close(write)
    try:
        with monkeypatch.context() as patched, open(read, encoding="utf-8") as stdin:
            patched.setattr(sys, "stdin", stdin)
            yield
    finally:
        if not data:
            os.close(write)


def test_a_question_typed_beside_a_pipe_is_asked_about_the_piped_text(
        tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`echo "…moved to Tuesday…" | chat "When is the meeting?"` asked only the question (the
    notes were dropped without a word, and the reply made up a day); a pipe left open with
    nothing in it (a script's own standard input) is not waited on. (In this process, on a
    real pipe, but for the pipeline of a command that takes a while: a process of its own each
    cost a second of CPU to start.)"""
    prof = str(_profile_file(tmp_path, max_tokens=1))
    words = ["chat", "-p", prof, "--json", "When is the meeting?"]

    def prompt_n(*args: str, piped: bytes | None = None) -> tuple[int, str]:
        """The prompt's tokens of `chat ARGS` (and its stderr), its standard input a pipe that
        brings ``piped`` and ends, or one held open with nothing in it (b""), or none (None)."""
        with contextlib.nullcontext() if piped is None else _stdin_piped(monkeypatch, piped):
            assert main(list(args)) == 0
        out, err = capsys.readouterr()
        return int(json.loads(out)["metrics"]["prompt_n"]), err

    alone, _ = prompt_n(*words)
    notes = "The meeting is moved to Tuesday at 3pm in room 12 of the north building.\n"
    both, _ = prompt_n(*words, piped=notes.encode())
    with_notes, _ = prompt_n(*words[:-1], notes + "\nWhen is the meeting?")
    assert both == with_notes > alone + 15  # the notes, then the question: as if typed so
    # (its standard input stays open, nothing written: answered without waiting for it)
    idle, err = prompt_n(*words, piped=b"")
    assert idle == alone, err
    assert "nothing came through the pipe in 5 s, so the question went alone" in err, err  # said, not dropped unsaid
    # a command that takes a while to write its text (chat … | chat loads a model first): waited for
    chat = [sys.executable, "-m", "workstation.cli", *words]
    piped_late = subprocess.run(["bash", "-c", '(sleep 1.5; printf %s "$0") | "$@"', notes, *chat],
                                capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert piped_late.returncode == 0, piped_late.stderr
    assert int(json.loads(piped_late.stdout)["metrics"]["prompt_n"]) == with_notes


def test_conversations_are_shown_exported_renamed_and_deleted_by_title_or_number(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`conversations` only listed: one could not be read, exported, renamed or deleted from the
    command line, and the app's titles (a message's first words) were long to type: #N names one."""
    import io

    from workstation.core.store import ConversationStore

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal to ask on
    store = ConversationStore()
    first = store.new("Write a Python function that adds two numbers,", "office-cpu")
    store.add_message(first.id, "user", "Write a Python function that adds two numbers, please.")
    store.add_message(first.id, "assistant", "def add(a, b):\n    return a + b")
    other = store.new("Weekly notes", "office-cpu")
    store.add_message(other.id, "user", "Lunch is at noon.")
    store.close()
    assert main(["conversations"]) == 0
    listed = capsys.readouterr().out
    assert re.search(rf"\|\s+#{first.id} \| Write a Python function that adds two numbers, \|\s+2 \|", listed), listed
    # in the app's language, or --lang's (it was English on a Turkish PC), a day as Turkish writes it
    assert main(["conversations", "--lang", "tr"]) == 0
    listed = capsys.readouterr().out
    assert re.search(r"^\|\s+# \| sohbet\s+\| mesaj \| son mesaj\s+\| profil\s+\|$", listed, re.M) and re.search(
        r"\| \d\d\.\d\d\.\d{4} \d\d:\d\d \|", listed) and "Birine devam etmek için: '" in listed, listed
    assert 'chat -c İSİM "..."' in listed, listed  # the placeholder --help and argparse say, in Turkish too (NAME was English)
    # a number as a shell takes it pasted: 'show #N' was 'show' and a comment ("needs NAME")
    assert f"'workstation conversations show {other.id}' {other.id} numaralı sohbeti gösterir." in listed, listed
    # found by words in it, as the app's Ctrl+F finds it (the command line listed them all, or none)
    assert main(["conversations", "--search", "LUNCH", "--json"]) == 0
    assert [c["id"] for c in json.loads(capsys.readouterr().out)["conversations"]] == [other.id]
    assert main(["conversations", "list", "-s", "holidays"]) == 0
    assert capsys.readouterr().out == 'No conversation holds "holidays".\n'
    assert main(["conversations", "show", f"#{first.id}"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("# Write a Python function that adds two numbers,\n") and "return a + b" in shown
    # its headings in the app's language or --lang's, as F7 writes them (they were English under --lang tr)
    assert main(["conversations", "show", f"#{first.id}", "--lang", "tr"]) == 0
    assert "\n## Siz\n" in (shown_tr := capsys.readouterr().out) and "\n## Asistan\n" in shown_tr, shown_tr
    assert main(["conversations", "show", str(first.id)]) == 0  # a bare number, as the list's hint writes it
    assert capsys.readouterr().out == shown  # (it said 'Did you mean "#1"?')
    assert main(["conversations", "show", "weekly NOTES", "--json"]) == 0  # a title, case aside
    data = json.loads(capsys.readouterr().out)
    assert data["id"] == other.id and [m["content"] for m in data["messages"]] == ["Lunch is at noon."]
    assert main(["conversations", "show", "weekly"]) == 1
    assert 'There is no saved conversation "weekly"' in capsys.readouterr().err
    assert main(["conversations", "show", "weekly", "--lang", "tr"]) == 1
    assert capsys.readouterr().err.endswith('numaralarıyla listeler). Bunu mu demek istediniz: "Weekly notes"?\n')
    out = tmp_path / "adds.md"
    assert main(["conversations", "export", f"#{first.id}", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == shown  # as show prints it, as F7 writes it
    capsys.readouterr()
    assert main(["conversations", "export", f"#{first.id}", "-o", str(tmp_path / "tr.md"), "--lang", "tr"]) == 0
    assert (tmp_path / "tr.md").read_text(encoding="utf-8") == shown_tr and capsys.readouterr().err == \
        f'"Write a Python function that adds two numbers," sohbeti {tmp_path / "tr.md"} dosyasına yazıldı.\n'
    # no -o: a new file here, named after the title, never over one there (it said "needs -o/--output")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    (here / "Weekly-notes.md").write_text("mine\n", encoding="utf-8")
    assert main(["conversations", "export", str(other.id)]) == 0
    assert capsys.readouterr().err == f'Wrote the conversation "Weekly notes" to {here / "Weekly-notes-2.md"}.\n'
    assert (here / "Weekly-notes.md").read_text(encoding="utf-8") == "mine\n"
    assert (here / "Weekly-notes-2.md").read_text(encoding="utf-8").startswith("# Weekly notes\n")
    # a file made after its name was found free is not written over either: the next number is tried
    from workstation.core.atomic import write_bytes_atomic

    with pytest.raises(FileExistsError):
        write_bytes_atomic(here / "Weekly-notes.md", b"late\n", make_folders=False, replace=False)
    assert (here / "Weekly-notes.md").read_text(encoding="utf-8") == "mine\n" and not list(here.glob(".*.tmp"))
    out.write_text("mine\n", encoding="utf-8")
    assert main(["conversations", "export", f"#{first.id}", "-o", str(out)]) == 1  # asked first; no terminal
    assert out.read_text(encoding="utf-8") == "mine\n" and "add --yes to replace it" in capsys.readouterr().err
    # never written over the document the conversation is about (F6's), --yes or not (it replaced it)
    import json as json_

    from workstation.core.kept_summary import KEPT

    memo = tmp_path / "memo.txt"
    memo.write_text("The canteen closes at two.\n", encoding="utf-8")
    store = ConversationStore()
    store.remember(KEPT, json_.dumps({"path": str(memo), "at": 0, "asked": first.id, "result": {}}))
    store.close()
    assert main(["conversations", "export", f"#{first.id}", "-o", str(memo), "--yes"]) == 1
    assert memo.read_text(encoding="utf-8") == "The canteen closes at two.\n"
    assert f"{memo} is a document this conversation is about, so it was left as it was" in capsys.readouterr().err
    assert main(["conversations", "rename", f"#{first.id}", "Adding"]) == 0
    assert 'Renamed "Write a Python function that adds two numbers," to "Adding"' in capsys.readouterr().out
    assert main(["conversations", "rename", "adding", "Adding", "--lang", "tr"]) == 0
    assert capsys.readouterr().out.startswith('"Adding" sohbetinin adı "Adding" oldu; \'')
    assert main(["conversations", "rename", "Adding", "weekly notes"]) == 1  # a title taken (case aside)
    capsys.readouterr()
    assert main(["conversations", "delete", "Adding"]) == 1  # asked first; no terminal: kept
    assert "Nothing was deleted: add --yes" in capsys.readouterr().err
    assert main(["conversations", "delete", "Adding", "--lang", "tr"]) == 1
    assert capsys.readouterr().err.endswith('"Adding" sohbeti silinsin mi (2 mesaj)? Hiçbir şey silinmedi: sormadan '
                                            "silmek için --yes ekleyin.\n")
    assert main(["conversations", "delete", "Adding", "--yes"]) == 0
    store = ConversationStore()
    assert [c.title for c in store.list()] == ["Weekly notes"]
    store.close()
    assert main(["chat", "-c", f"#{first.id}", "Hello"]) == 1  # a number no conversation has now
    assert f'There is no saved conversation "#{first.id}"' in capsys.readouterr().err
    assert main(["chat", "-c", f"#{first.id}", "--lang", "tr", "Hello"]) == 1  # (it was English under --lang tr)
    assert f'"#{first.id}" adında kayıtlı bir sohbet yok (' in capsys.readouterr().err
    # no title is written as a number (it hid that conversation's number); '#²' and a bare number are no numbers
    assert main(["conversations", "rename", "weekly notes", f"#{other.id + 5}"]) == 1
    assert "reads as a conversation's number (#12 is conversation 12); choose a title with words" in \
        capsys.readouterr().err
    assert main(["chat", "-c", f"#{other.id + 5}", "--new", "Hello"]) == 1
    assert "name the new conversation with words" in capsys.readouterr().err
    for typed in ("#²", str(other.id + 5)):
        assert main(["conversations", "show", typed]) == 1
        err = capsys.readouterr().err
        assert f'There is no saved conversation "{typed}"' in err and "Traceback" not in err, err
    # `chat -c "Make it shorter"` (as `llm -c` continues the last one): the message was taken for a name and
    # it said "needs text" (with a pipe: began a conversation "Make it shorter"); now the command that continues it
    with pytest.raises(SystemExit) as stopped:
        main(["chat", "-c", "Make it shorter"])
    assert stopped.value.code == 2 and capsys.readouterr().err == (
        "workstation: -c takes a conversation's name first, then your message; no conversation is named \"Make it "
        f"shorter\". To continue the last one (\"Weekly notes\"): workstation chat -c {other.id} 'Make it shorter'\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("The canteen closes at two.\n", encoding="utf-8")
    with notes.open(encoding="utf-8") as piped:  # text piped in: `-c NAME` continues or starts NAME, as a
        monkeypatch.setattr(sys, "stdin", piped)  # script's `… | chat -c "Project X"` (it was refused)
        assert main(["chat", "-c", "Project X", "--max-tokens", "2"]) == 0
    assert 'Started a new conversation "Project X"' in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(SystemExit):
        main(["chat", "-c", "Make it shorter", "--lang", "tr"])
    assert "Son sohbete (\"Project X\") devam etmek için: workstation chat -c" in capsys.readouterr().err
    store = ConversationStore()
    assert sorted(c.title for c in store.list()) == ["Project X", "Weekly notes"]
    # a title that is a number (a first message "2") is its own conversation's, not the one of that number's
    numbered = store.new(str(other.id), "office-cpu")
    store.close()
    assert main(["conversations", "show", str(other.id), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == numbered.id != other.id


def test_show_json_keeps_the_facts_counted_of_an_attached_table(capsys: pytest.CaptureFixture[str]) -> None:
    """`conversations show --json` left out the facts the program counted of a message's attached table
    (kept with the message since schema 9): a script reading it had the model's words, not the counts."""
    from workstation.core.store import ConversationStore

    facts = [{"title": "invoices.csv", "rows": 4, "columns": [{"name": "Amount", "total": "4,800"}]}]
    store = ConversationStore()
    conv = store.new("Invoices", "office-cpu")
    store.add_message(conv.id, "user", "total?", facts=facts)
    store.add_message(conv.id, "assistant", "4,800.")
    store.close()
    assert main(["conversations", "show", str(conv.id), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["messages"]
    assert [(m["role"], m["facts"]) for m in shown] == [("user", facts), ("assistant", [])]


def test_quantize_into_a_read_only_models_folder_says_so(
        tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`models quantize … --allow-requantize` into a read-only models folder said only
    "llama.cpp could not quantize X to q8_0."; the folder is checked first, and the real cause said."""
    disk = tmp_path / "models"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(disk)],
                      capture_output=True).returncode:
        pytest.skip("mounting a small disk needs root")
    try:
        monkeypatch.setenv("WORKSTATION_MODELS", str(disk))
        assert main(["models", "quantize", str(smollm2_path), "--type", "q8_0", "--allow-requantize"]) == 1
        err = capsys.readouterr().err
        assert f"workstation: Cannot write {disk}/" in err and \
            err.endswith(": it is on a disk that takes no writes (read-only).\n"), err
        assert "could not quantize" not in err
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)  # writable, and too small
        assert main(["models", "quantize", str(smollm2_path), "--type", "q8_0", "--allow-requantize"]) == 1
        err = capsys.readouterr().err
        assert re.search(r": the copy needs about \d+ MB and its disk has \d+ KB free\.\n$", err), err  # (not 0.0 GB)
        assert sorted(p.name for p in disk.iterdir()) == []  # no half-written .part left
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def test_a_kv_state_not_saved_is_said_on_a_line_of_its_own_after_the_reply(
        tmp_path: Path, smollm2_path: Path) -> None:
    """`chat -c` on a nearly full disk: "Could not save a KV state: no room…" (said as the engine
    closed) ran into the reply's last line ("…that mayCould not save a KV state")."""
    disk = tmp_path / "data"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a small disk needs root")
    try:
        prof = _profile_file(tmp_path, max_tokens=24)
        env = {**os.environ, "WORKSTATION_DATA": str(disk)}
        question = "Please read these notes about the office move and say what matters most. " * 4
        proc = subprocess.run([sys.executable, "-m", "workstation.cli", "chat", "-p", str(prof), "-c", "move",
                               question], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=120, cwd=Path(__file__).parent.parent)
        assert proc.returncode == 0, proc.stdout
        lines = proc.stdout.splitlines()
        warned = [line for line in lines if "Could not save a KV state" in line]
        assert warned and all(line.startswith(("Could not save", "workstation: Could not save")) for line in warned), \
            proc.stdout
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def test_fit_says_a_slow_speed_with_a_decimal(capsys: pytest.CaptureFixture[str]) -> None:
    """fit -p gpu-llama31-8b on a 2-core PC said "about 1 tokens/s": under 2 it is said with
    a decimal, as the words a second beside it are (phrases.rounded_words)."""
    assert main(["fit", "-p", "gpu-llama31-8b"]) in (0, 2)
    out = capsys.readouterr().out
    speed = re.search(r"speed: +Up to about ([\d.,]+) words a second", out)  # as F4 and Turkish say it
    assert speed is not None, out
    tps = float(speed.group(1).replace(",", ""))
    assert tps >= 2 or "." in speed.group(1), out
    assert "about 1 words" not in out and "tokens/s" not in out


def test_fit_of_a_catalog_model_names_the_profile_that_runs_it(capsys: pytest.CaptureFixture[str]) -> None:
    """fit -p llama-3.1-8b-instruct-q4_k_m (a catalog model, not downloaded) said only "There is no
    profile named …": it answers as the profile that runs it, and says so (``test_fit_figures``),
    and for a model no profile runs, its plan as a new profile's."""
    assert main(["fit", "-p", "llama-3.1-8b-instruct-q4_k_m"]) in (0, 2)
    out = capsys.readouterr().out
    assert out.startswith("gpu-llama31-8b: llama-3.1-8b-instruct-q4_k_m (llama, Q4_K_M)"), out
    assert "(planned as the profile gpu-llama31-8b, which runs it, with its settings)" in out, out
    # a model no profile runs: answered as the profile `profiles new` would make of it, before a
    # download (it said "is a model, not a profile; download it with …", where F4 gives the estimate)
    assert main(["fit", "-p", "phi-4-14b-q4_k_m"]) in (0, 2)
    out = capsys.readouterr().out
    assert "(no profile runs phi-4-14b-q4_k_m: planned as the profile " in out, out
    assert "models pull phi-4-14b-q4_k_m" in out and "profiles new phi-4-14b-q4_k_m" in out, out


def test_fit_takes_the_name_after_it_as_profiles_check_does(capsys: pytest.CaptureFixture[str]) -> None:
    """`fit llama-3.1-8b-instruct-q4_k_m` (a catalog name, typed as `profiles check NAME` takes one)
    said only "'fit' takes options only": the name after fit is read as -p reads it, a profile
    planned, a model's name answered with the command that plans it; -p too, once."""
    assert main(["fit", "gpu-llama31-8b"]) in (0, 2)  # (2: it does not fit this PC)
    assert capsys.readouterr().out.startswith("gpu-llama31-8b: llama-3.1-8b-instruct-q4_k_m (llama, Q4_K_M)")
    assert main(["fit", "llama-3.1-8b-instruct-q4_k_m"]) in (0, 2)  # (a model's name: as the profile that runs it)
    captured = capsys.readouterr()
    assert captured.out.startswith("gpu-llama31-8b: llama-3.1-8b-instruct-q4_k_m (llama, Q4_K_M)"), captured.out
    assert "takes options only" not in captured.err and not captured.err, captured.err
    assert main(["fit", "office-cpu", "-p", "office-cpu"]) == 0  # (the same one twice: no harm)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:  # two: which one?
        main(["fit", "office-cpu", "-p", "draft-pair"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "'office-cpu' and -p 'draft-pair' name two profiles; give one" in err, err
    assert "Traceback" not in err
    # and --help says what fit is for, in a sentence (it had none), in Turkish too
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "Says whether a model or profile fits this PC's memory, and how fast it will write." in said, said
    with pytest.raises(SystemExit):
        main(["fit", "--help", "--lang", "tr"])
    said = " ".join(capsys.readouterr().out.split())
    assert "Bir modelin ya da profilin bu bilgisayarın belleğine sığıp sığmadığını ve ne kadar hızlı yazacağını " \
           "söyler." in said, said


def test_fit_says_each_figure_in_words_first(capsys: pytest.CaptureFixture[str]) -> None:
    """A paralegal read fit -p gpu-llama31-8b as "KV cache: 1.6 GB (16,384 cells…)", "the draft
    model", "f16 K/V", "counted at 0.79x on the CPU…": the figures stay, each said in words first,
    the engineers' names in brackets after them."""
    assert main(["fit", "-p", "gpu-llama31-8b"]) in (0, 2)
    out = capsys.readouterr().out
    head = out.splitlines()[0]
    assert head == ("gpu-llama31-8b: llama-3.1-8b-instruct-q4_k_m (llama, Q4_K_M), reads up to 16,384 tokens at once "
                    "(context), its context memory at half size (K/V q8_0/q8_0)"), head
    assert re.search(r"\n  the model itself \(weights\): [\d.]+ GB; its helper model \(draft\) takes [\d.]+ MB of it\n", out), out
    assert re.search(r"\n  memory for the conversation \(context\): [\d.]+ GB for 16,384 tokens \(KV cache\); its "
                     r"helper model \(draft\) takes [\d.]+ MB of it\n", out), out
    assert re.search(r"\n  working memory while it writes \(compute\): [\d.]+ MB, an estimate; ", out), out
    assert "\n  parts on the graphics card (GPU layers): 0 of 33 (gpu_layers: auto)\n" in out, out
    assert "counts its helper model for faster replies (draft), llama-3.2-1b-instruct-q4_k_m: " in out, out
    assert " MB of context memory at full size (f16 K/V) on the CPU" in out, out
    # (the speed as F4 and the Turkish say it: the slower context memory in its words, no "0.79x")
    assert "It counts the smaller context memory as slower: on a CPU it takes longer to write and read (replies " \
           "about a fifth slower" in out, out
    for jargon in ("KV cache:", "cells", "the draft model", "of f16 K/V", "counted at 0.79x", "CPU copy"):
        assert jargon not in out, (jargon, out)


def test_conversations_show_and_export_say_a_messages_table_facts_in_their_language(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`conversations show|export --lang tr` of a message with a CSV attached wrote the program's
    facts of its table in English ("Facts counted by the program from every row:", 2026-01-03),
    the words around them Turkish: the facts the store keeps with it are said in --lang's language,
    as F7 writes them (one exporter)."""
    from workstation.core.store import ConversationStore
    from workstation.core.summary_chunks import FACTS_LABEL
    from workstation.core.table_facts import facts_record
    from workstation.tui.attachment import with_attached
    from workstation.tui.integrations import read_document_text

    path = tmp_path / "invoices.csv"
    path.write_text("Invoice,Date,Amount,Status\nINV-101,2026-01-03,1200,unpaid\nINV-102,2026-01-09,300,paid\n",
                    encoding="utf-8")
    text, _, facts = read_document_text(path)
    store = ConversationStore()
    conv = store.new("Invoices", "office-cpu")
    store.add_message(conv.id, "user", with_attached("total of unpaid invoices", "Document: invoices.csv", text),
                      facts=[facts_record(f) for f in facts])
    store.add_message(conv.id, "assistant", "1,200.")
    store.close()
    assert main(["conversations", "show", str(conv.id), "--lang", "tr"]) == 0
    shown = capsys.readouterr().out
    assert "Belge: invoices.csv" in shown and "Programın her satırdan saydığı bilgiler:" in shown, shown
    assert FACTS_LABEL not in shown and "03.01.2026" in shown and "2026-01-03 ile" not in shown, shown
    out = tmp_path / "tr.md"
    assert main(["conversations", "export", str(conv.id), "-o", str(out), "--lang", "tr"]) == 0
    assert out.read_text(encoding="utf-8") == shown
    assert main(["conversations", "show", str(conv.id), "--lang", "en"]) == 0
    assert FACTS_LABEL in (english := capsys.readouterr().out) and "2026-01-03" in english, english
