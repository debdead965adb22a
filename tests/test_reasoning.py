"""A reasoning model's thinking, told apart from its answer (``core/reasoning.py``): in the
decode core, the chat command, ``workstation serve`` (``reasoning_content``, as llama-server
gives it), the remote engine (whatever field another server uses) and the TUI.

No reasoning model is small enough to ship in the tests, so SmolLM2 stands in two ways: a
grammar makes it write a ``<think>`` block and then an answer, and a copy of it with a
reasoning model's chat template (``thinking_model_path``: the prompt opens the block itself,
as DeepSeek-R1's does) starts its reply inside the thinking.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import make_profile
from hypothesis import given
from hypothesis import strategies as st
from serve_helpers import RunningServer, serve, write_profile

from workstation.core.engine import Engine
from workstation.core.events import TokenDelta, TurnFinished, finished_turn
from workstation.core.phrases import about_words, words_in
from workstation.core.profile_check import profile_from_dict
from workstation.core.profiles import Constraints
from workstation.core.reasoning import ThinkingSplitter, opens_thinking
from workstation.core.remote import RemoteEngine
from workstation.core.stop_strings import StopMatcher
from workstation.core.store import ConversationStore

QUESTION = [{"role": "user", "content": "What is two plus two?"}]
# a thinking block, then the answer (the model's own words inside both)
GRAMMAR = r'root ::= "<think>" [a-z ]{8,30} "</think>" "\n" [A-Za-z ]{3,30}'
# for a template that opened the block: the thinking, its end, the answer
OPENED_GRAMMAR = r'root ::= [a-z ]{8,30} "</think>" "\n" [A-Za-z ]{3,30}'


def _split(text: str, cuts: list[int], opened: bool = False) -> tuple[str, str]:
    splitter, thought, answer, at = ThinkingSplitter(opened), "", "", 0
    for n in [*cuts, len(text)]:
        r, a = splitter.push(text[at : at + n])
        thought, answer, at = thought + r, answer + a, at + n
    r, a = splitter.flush()
    return thought + r, answer + a


words = st.text(st.characters(codec="utf-8", exclude_characters="<>"), max_size=40)


@given(words, words, st.lists(st.integers(1, 5), max_size=30))
def test_a_block_is_told_apart_however_the_text_is_cut(thought: str, answer: str, cuts: list[int]) -> None:
    got_thought, got_answer = _split(f"<think>\n{thought}</think>\n\n{answer}", cuts)
    assert (got_thought, got_answer) == (thought.strip(), answer.lstrip())
    opened_thought, opened_answer = _split(f"{thought}</think>{answer}", cuts, opened=True)
    assert (opened_thought, opened_answer) == (thought.strip(), answer.lstrip())


@given(words, st.lists(st.integers(1, 5), max_size=30))
def test_an_answer_without_a_block_comes_through_unchanged(answer: str, cuts: list[int]) -> None:
    for text in (answer, f"  {answer}", f"<b>{answer}", f"Yes {answer} <think> x </think> y", "<thin"):
        assert _split(text, cuts) == ("", text)
    assert opens_thinking("<|im_start|>assistant\n<think>\n") and not opens_thinking("<think>a</think>")


def test_a_stop_string_keeps_what_came_after_it() -> None:
    stop = StopMatcher(["</think>"])
    assert stop.push("abc</th") == ("abc", False)
    assert stop.push("ink>\nrest") == ("", True) and stop.after == "\nrest"


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(make_profile(sampling={"max_tokens": 64})) as e:
        yield e


def test_the_engine_streams_the_thinking_beside_the_answer(engine: Engine) -> None:
    """The same greedy reply decoded as a chat turn and as raw tokens: the chat turn's thinking
    and answer are the raw text's block and rest, nothing lost, no tag in the answer."""
    events = list(engine.stream_chat(QUESTION, constraints=Constraints(grammar=GRAMMAR)))
    final = events[-1]
    deltas = [e for e in events if isinstance(e, TokenDelta)]
    assert isinstance(final, TurnFinished) and final.reasoning and final.text.strip()
    assert "".join(d.text for d in deltas) == final.text and "<" not in final.text
    assert "".join(d.reasoning for d in deltas) == final.reasoning  # streamed = kept
    assert sum(d.tokens for d in deltas) == final.metrics.predicted_n
    m = final.metrics
    assert 0 < m.reasoning_ms <= m.total_ms
    # the thinking came first: no answer text before the last piece of thinking
    last_thought = max(i for i, d in enumerate(deltas) if d.reasoning)
    assert not any(d.text for d in deltas[:last_thought])
    raw = finished_turn(
        engine.stream_tokens(engine.chat_prompt(QUESTION), constraints=Constraints(grammar=GRAMMAR))
    )
    assert raw.reasoning == "" and raw.metrics.reasoning_n == 0 and raw.tokens == final.tokens
    block, _, rest = raw.text.partition("</think>")
    assert block.startswith("<think>") and block[len("<think>") :].strip() == final.reasoning
    assert rest.lstrip() == final.text
    # reasoning_n: the tokens up to the one that ends "</think>", with or without logprobs
    closing = next(k for k in range(len(raw.tokens)) if "</think>" in engine.model.detokenize(raw.tokens[: k + 1]))
    assert m.reasoning_n == closing + 1 < m.predicted_n
    with_probs = engine.run_chat(QUESTION, constraints=Constraints(grammar=GRAMMAR, n_probs=2))
    assert with_probs.metrics.reasoning_n == m.reasoning_n and with_probs.reasoning == final.reasoning


def test_a_template_that_opens_the_block_starts_the_reply_inside_it(thinking_model_path: Path) -> None:
    with Engine(make_profile(thinking_model_path, sampling={"max_tokens": 10})) as e:
        cut = e.run_chat(QUESTION)  # it never closes the block: all thinking, cut by the limit
        longer = dataclasses.replace(e.profile.sampling, max_tokens=48)
        answered = e.run_chat(QUESTION, longer, constraints=Constraints(grammar=OPENED_GRAMMAR))
    assert cut.text == "" and cut.reasoning and cut.metrics.stop_reason == "length"
    assert cut.metrics.reasoning_n == cut.metrics.predicted_n == 10
    assert answered.reasoning and answered.text.strip() and "think>" not in answered.text


def test_a_grammar_that_cannot_close_the_block_is_the_answer(thinking_model_path: Path) -> None:
    """A JSON schema or a tool call after a template that opened the block: the reply the
    grammar makes is the answer (else a schema reply came back empty, all of it "thinking")."""
    grammar = r'root ::= "{\"answer\": " [0-9] [0-9]? "}"'
    with Engine(make_profile(thinking_model_path, sampling={"max_tokens": 16})) as e:
        reply = e.run_chat(QUESTION, constraints=Constraints(grammar=grammar))
    assert reply.reasoning == "" and json.loads(reply.text)["answer"] >= 0 and reply.metrics.reasoning_n == 0


def test_thinking_off_asks_the_template_for_an_answer_at_once(thinking_model_path: Path) -> None:
    """``thinking: false`` in a profile is the template's ``enable_thinking`` (Qwen3's switch):
    the prompt closes an empty block itself and the reply is all answer."""
    with Engine(make_profile(thinking_model_path, thinking=False, sampling={"max_tokens": 10})) as e:
        prompt = e.model.detokenize(e.chat_prompt(QUESTION), special=True)
        reply = e.run_chat(QUESTION)
    assert prompt.endswith("<think>\n\n</think>\n\n")
    assert reply.reasoning == "" and reply.text.strip() and reply.metrics.reasoning_n == 0


def test_a_reply_gone_on_from_after_a_template_that_opens_the_block_is_answer(thinking_model_path: Path) -> None:
    """A reply begun (the app's Alt+C, serve's prefill) went inside the block the template
    opened: the model thought and answered again, all after the first answer."""
    with Engine(make_profile(thinking_model_path, sampling={"max_tokens": 6})) as e:
        history = [*QUESTION, {"role": "assistant", "content": "Red, green"}]
        prompt = e.model.detokenize(e.chat_prompt(history), special=True)
        reply = e.run_chat(history)
    assert prompt.endswith("<think>\n</think>\n\nRed, green"), prompt[-60:]
    assert reply.reasoning == "" and reply.metrics.reasoning_n == 0  # what comes is the answer's rest


@pytest.fixture(scope="module")
def server(thinking_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    path = write_profile(tmp_path_factory.mktemp("reasoning-serve"), thinking_model_path)
    with serve(path) as running:
        yield running


def _chat(server: RunningServer, **extra: object) -> httpx.Response:
    body = {"messages": QUESTION, "max_tokens": 40, "temperature": 0, "grammar": OPENED_GRAMMAR, **extra}
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=120)


def test_serve_puts_the_thinking_in_reasoning_content(server: RunningServer) -> None:
    """As llama-server's reasoning_format "auto"/"deepseek": message.reasoning_content, the
    stream's delta.reasoning_content, usage's reasoning_tokens; "none" leaves it in the content;
    a completion (not a chat) is its text."""
    whole = _chat(server).json()
    message = whole["choices"][0]["message"]
    assert message["reasoning_content"] and message["content"].strip() and "think>" not in message["content"]
    details = whole["usage"]["completion_tokens_details"]
    assert 0 < details["reasoning_tokens"] < whole["usage"]["completion_tokens"]

    thought, answer = "", ""
    with httpx.stream("POST", f"{server.base_url}/chat/completions", timeout=120, json={
        "messages": QUESTION, "max_tokens": 40, "temperature": 0, "grammar": OPENED_GRAMMAR, "stream": True,
    }) as response:
        for line in response.iter_lines():
            if line.startswith("data: {"):
                for choice in json.loads(line[6:])["choices"]:
                    thought += choice["delta"].get("reasoning_content") or ""
                    answer += choice["delta"].get("content") or ""
    assert (thought, answer) == (message["reasoning_content"], message["content"])

    raw = _chat(server, reasoning_format="none").json()["choices"][0]["message"]
    assert "reasoning_content" not in raw
    block, _, rest = raw["content"].partition("</think>")
    assert (block.strip(), rest.lstrip()) == (message["reasoning_content"], message["content"])

    refused = _chat(server, reasoning_format="deepseek-legacy")
    assert refused.status_code == 400 and "'reasoning_format'" in refused.json()["error"]["message"]


def test_serve_takes_chat_template_kwargs_and_reasoning_budget(server: RunningServer) -> None:
    """llama-server's two ways to turn thinking off for one request: Qwen3's enable_thinking in
    chat_template_kwargs, and reasoning_budget 0; /apply-template renders the same prompt."""
    plain = {"messages": QUESTION, "max_tokens": 8, "temperature": 0}
    for extra in ({"chat_template_kwargs": {"enable_thinking": False}}, {"reasoning_budget": 0}):
        reply = httpx.post(f"{server.base_url}/chat/completions", json={**plain, **extra}, timeout=120).json()
        message = reply["choices"][0]["message"]
        assert "reasoning_content" not in message and message["content"].strip()
        rendered = httpx.post(f"{server.root}/apply-template", json={**plain, **extra}, timeout=60).json()
        assert rendered["prompt"].endswith("<think>\n\n</think>\n\n")
    thinking = httpx.post(f"{server.root}/apply-template", json=plain, timeout=60).json()
    assert thinking["prompt"].endswith("<think>\n")
    for bad, word in (({"chat_template_kwargs": {"messages": []}}, "cannot set"),
                      ({"chat_template_kwargs": {"x": [1]}}, "must be true, false"),
                      ({"reasoning_budget": 100}, "'reasoning_budget' is 100")):
        refused = httpx.post(f"{server.base_url}/chat/completions", json={**plain, **bad}, timeout=60)
        assert refused.status_code == 400 and word in refused.json()["error"]["message"]


def test_the_remote_engine_reads_our_servers_thinking(server: RunningServer) -> None:
    profile = profile_from_dict({
        "name": "remote-thinking", "backend": "openai", "context": 1024,
        "remote": {"base_url": server.base_url, "timeout_s": 120},
        "sampling": {"temperature": 0.0, "max_tokens": 12, "seed": 1, "repeat_penalty": 1.0},
    }, "<test>")
    with RemoteEngine(profile) as remote:
        final = remote.run_chat(QUESTION)
    assert final.text == "" and final.reasoning and final.metrics.stop_reason == "length"
    assert final.metrics.reasoning_n == 12  # the server's count (usage), not the chunks'


class _OtherServers(BaseHTTPRequestHandler):
    """Streams one reply as other servers send thinking: Ollama's and OpenRouter's ``reasoning``
    field, or (a server left at reasoning_format "none") the tags in the content, cut
    mid-tag across chunks."""

    style = "field"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.style == "field":
            deltas = [{"reasoning": "add two "}, {"reasoning": "and two"}, {"content": "Four."}]
        else:
            deltas = [{"content": c} for c in ("<thi", "nk>add two ", "and two</th", "ink>\n\n", "Four.")]
        chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        raw = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.mark.parametrize("style", ["field", "inline"])
def test_the_remote_engine_reads_other_servers_thinking(style: str) -> None:
    handler = type("Handler", (_OtherServers,), {"style": style})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        profile = profile_from_dict({
            "name": "other", "backend": "openai", "context": 1024,
            "remote": {"base_url": f"http://127.0.0.1:{httpd.server_address[1]}/v1", "model": "m"},
        }, "<test>")
        with RemoteEngine(profile) as remote:
            events = list(remote.stream_chat(QUESTION))
    finally:
        httpd.shutdown()
    final = events[-1]
    assert isinstance(final, TurnFinished)
    assert (final.reasoning, final.text) == ("add two and two", "Four.")
    assert "".join(e.text for e in events if isinstance(e, TokenDelta)) == "Four."


@pytest.fixture
def thinker(thinking_model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A profile named "thinker" for the thinking model, 8 tokens a reply, in its own folder."""
    folder = tmp_path / "profiles"
    folder.mkdir()
    data = {"name": "Thinker", "model": str(thinking_model_path), "context": 1024, "threads": 1,
            "sampling": {"temperature": 0.0, "max_tokens": 8, "seed": 1, "repeat_penalty": 1.0}}
    (folder / "thinker.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_PROFILES", str(folder))
    return "thinker"


def test_the_chat_command_prints_the_answer_and_keeps_the_thinking(
    thinker: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """stdout is the answer alone; the thinking goes to stderr, into --json, and into the saved
    conversation, whose next prompt leaves it out."""
    from workstation.cli import main

    assert main(["chat", "-p", "thinker", "-c", "maths", "What is two plus two?"]) == 1
    out, err = capsys.readouterr()
    assert out.strip() == "" and "Thinking: " in err
    assert "spent all 8 tokens of its limit thinking and gave no answer; raise --max-tokens" in err
    store = ConversationStore()
    conv = next(c for c in store.list() if c.title == "maths")
    reply = store.messages(conv.id)[-1]
    assert reply.role == "assistant" and reply.content == "" and reply.reasoning
    assert reply.reasoning in err
    assert all(reply.reasoning not in m["content"] for m in store.prompt_messages(conv.id, then="And three?"))
    assert main(["chat", "-p", "thinker", "--json", "Hello"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["text"] == "" and shown["reasoning"]
    assert shown["metrics"]["reasoning_n"] == shown["metrics"]["predicted_n"] > 0


async def test_the_chat_folds_the_thinking_and_says_when_no_answer_came(thinker: str, tmp_path: Path) -> None:
    """The TUI: the thinking streams into a folded block above the answer ("Thought for 1.2 s ·
    6 words"), Enter on it unfolds it; a reply that was all thinking says so where the answer
    goes; the thinking is saved, shown again when the conversation is reopened, and never read
    back to the model."""
    from textual.widgets import Static
    from tui_helpers import type_message, until

    from workstation.tui.app import WorkstationApp
    from workstation.tui.widgets.message_view import MessageView

    app = WorkstationApp(thinker, sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await type_message(pilot, "What is two plus two?")
        await until(pilot, lambda: app.generating or app.last_metrics is not None)  # begun (or a fast one over)
        await until(pilot, lambda: not app.generating)
        view = list(app.chat_screen.query(MessageView))[-1]
        block = view.thought
        assert block.display and block.collapsed
        # its length in its words, not "8 tokens" (office staff read it)
        words = words_in(view.reasoning)
        assert words > 0 and block.title.startswith("Thought for ") and block.title.endswith(f" · {words} words"), block.title
        # its limit in words too, as a reply cut at its limit says it (it said "all 8 tokens")
        assert f"spent its whole limit, about {about_words(8)} words, thinking and has not answered yet. Allow longer replies in this " \
               "conversation with Ctrl+E (Longest reply), or choose a profile that answers without thinking with F3." \
               in (view.body.source or ""), view.body.source  # (it named sampling.max_tokens and thinking: false)
        saved = app.store.messages(app.conversation_id)[-1]  # type: ignore[arg-type]
        assert saved.content == "" and saved.reasoning == view.reasoning != ""
        prompt = app.store.prompt_messages(app.conversation_id, then="And?")  # type: ignore[arg-type]
        assert all(saved.reasoning not in m["content"] for m in prompt)

        block.query_one("CollapsibleTitle").focus()
        await pilot.press("enter")
        await until(pilot, lambda: not block.collapsed)
        assert str(view.query_one(".thought-text", Static).content) == saved.reasoning

        shown = view.body.source
        await app.open_conversation(app.conversation_id)  # type: ignore[arg-type]
        await pilot.pause()
        reopened = list(app.chat_screen.query(MessageView))[-1]
        assert reopened is not view and reopened.reasoning == saved.reasoning and reopened.thought.display
        assert reopened.thought.collapsed and reopened.thought.title == block.title
        await until(pilot, lambda: reopened.body.source == shown)
        # cut by the conversation's own longest reply (Ctrl+E): that is what to raise, not the profile's
        app.session_sampling = dataclasses.replace(app.profile.sampling, max_tokens=6)  # type: ignore[union-attr]
        await type_message(pilot, "And three?")
        await until(pilot, lambda: len(app.store.messages(app.conversation_id)) == 4 and not app.generating)  # type: ignore[arg-type]
        view = list(app.chat_screen.query(MessageView))[-1]
        assert f"spent its whole limit, about {about_words(6)} words, thinking and has not answered yet. Raise this conversation's " \
               "longest reply with Ctrl+E" in (view.body.source or ""), view.body.source
