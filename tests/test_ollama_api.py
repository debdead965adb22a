"""Ollama's API on a real ``workstation serve`` (real model, real HTTP; one server for the module,
a few tokens a request): ``/api/tags``, ``/api/ps``, ``/api/version``, ``/api/show``,
``/api/chat`` and ``/api/generate`` whole and streamed as newline-delimited JSON, ``format``,
tools, options, refusals in Ollama's ``{"error": "..."}``, the key, the usage records and a
client that leaves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import wait_until
from serve_helpers import RunningServer, serve, write_profile

from workstation.core.installed_models import installed_name
from workstation.core.server.guard import CLIENT_GONE
from workstation.core.usage import UsageLog

KEY = "ollama-key"
HI = [{"role": "user", "content": "Say hi"}]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ollama-data")


@pytest.fixture(scope="module")
def server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory, data: Path) -> Iterator[RunningServer]:
    profile = write_profile(tmp_path_factory.mktemp("ollama"), smollm2_path)
    with serve(profile, "--alias", "office", api_key=KEY, data=data) as srv:
        yield srv


def post(server: RunningServer, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(f"{server.root}{path}", json=body, headers=headers or server.headers(), timeout=120)


def get(server: RunningServer, path: str) -> httpx.Response:
    return httpx.get(f"{server.root}{path}", headers=server.headers(), timeout=30)


def lines(server: RunningServer, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A streamed answer (``stream`` left out: Ollama streams by default), object by object."""
    with httpx.stream("POST", f"{server.root}{path}", json=body, headers=server.headers(), timeout=120) as r:
        assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
        sent = [line for line in r.iter_lines() if line]
    # compact JSON, as Ollama (Go) writes it (each ':' and ',' had a space after it)
    assert sent == [compact(json.loads(line)) for line in sent]
    return [json.loads(line) for line in sent]


def compact(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def error(r: httpx.Response, status: int) -> str:
    """Ollama's error shape: one string under "error"."""
    assert r.status_code == status, r.text
    body = r.json()
    assert list(body) == ["error"] and isinstance(body["error"], str) and r.text == compact(body)
    return str(body["error"])


def test_listings_name_the_served_model_under_each_name(server: RunningServer, smollm2_path: Path) -> None:
    tags = get(server, "/api/tags").json()["models"]
    assert [m["name"] for m in tags] == ["serve-test:latest", "office:latest"]
    assert all(m["model"] == m["name"] for m in tags)
    model = tags[0]
    assert model["size"] > 50_000_000 and model["modified_at"].endswith("Z")
    assert model["details"] == {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                                "parameter_size": "135M", "quantization_level": "Q4_1"}
    [loaded] = get(server, "/api/ps").json()["models"]
    assert loaded["name"] == "serve-test:latest" and loaded["details"] == model["details"]
    assert loaded["context_length"] == 1024 and loaded["size_vram"] == 0  # a slot's context; no GPU
    assert get(server, "/api/version").json()["version"].count(".") == 2

    shown = post(server, "/api/show", {"model": "OFFICE:latest"}).json()  # its names, tagged or not, in any case
    assert shown["details"] == model["details"] and shown["capabilities"] == ["completion", "tools"]
    assert shown["model_info"]["general.architecture"] == "llama"
    assert shown["model_info"]["llama.context_length"] == 8192  # the model's own; num_ctx is the server's
    assert "num_ctx                        1024" in shown["parameters"]
    assert "<|im_start|>" in shown["template"]
    assert f"FROM {smollm2_path.name}" in shown["modelfile"] and str(smollm2_path.parent) not in json.dumps(shown)
    assert error(post(server, "/api/show", {}), 400).startswith("'model' is required")
    # another name is Ollama's 404 (clients read it to say the model is missing), with what to choose
    missing = error(post(server, "/api/show", {"model": "llama3"}), 404)
    assert missing.startswith('model "llama3" not found: this server serves serve-test:latest (also named '
                              "office:latest)")
    # the model file's name, as serve's start line shows it in brackets, is the served model too
    file_name = installed_name(smollm2_path)
    assert post(server, "/api/show", {"model": file_name}).json()["details"] == model["details"]


def test_every_route_needs_the_key_and_refuses_in_ollamas_shape(server: RunningServer) -> None:
    for path in ("/api/tags", "/api/ps"):  # (they name the model)
        assert "API key" in error(httpx.get(f"{server.root}{path}", timeout=30), 401)
    # the probes Ollama's clients send before any key, answered as Ollama answers them; the
    # start-up line names the address they are pointed at
    assert httpx.get(f"{server.root}/api/version", timeout=30).json()["version"] == "0.9.0"
    for method in ("GET", "HEAD"):
        running = httpx.request(method, f"{server.root}/", timeout=30)
        assert running.status_code == 200 and running.headers["content-type"].startswith("text/plain")
        assert running.text == ("Ollama is running" if method == "GET" else "")
    assert f"/v1, Ollama's API at {server.root}" in server.log[0]
    assert "API key" in error(post(server, "/api/chat", {"model": "x", "messages": HI}, Authorization="Bearer no"), 401)
    # what this server does not do, with why
    for path in ("/api/embed", "/api/embeddings", "/api/pull", "/api/push", "/api/create", "/api/copy"):
        assert "This server" in error(post(server, path, {"model": "x"}), 501)
    assert "deletes no models" in error(httpx.request("DELETE", f"{server.root}/api/delete", json={"model": "x"},
                                                      headers=server.headers(), timeout=30), 501)
    assert error(get(server, "/api/nothing"), 404) == "There is no route /api/nothing."
    # JSON sent as Ollama's own examples send it (curl -d, so a form's Content-Type) is read (was 415)
    form = {**server.headers(), "Content-Type": "application/x-www-form-urlencoded"}
    loaded = httpx.post(f"{server.root}/api/chat", content=json.dumps({"model": "office", "messages": []}),
                        headers=form, timeout=30)
    assert loaded.status_code == 200 and loaded.json()["done_reason"] == "load", loaded.text
    assert error(httpx.post(f"{server.root}/api/chat", content=b"model=office", headers=form, timeout=30),
                 400) == "The request body is not valid JSON."
    # options and fields that would change the reply, refused by name
    refused = {
        "'options.mirostat'": {"options": {"mirostat": 2}},
        '"office" does not support thinking': {"think": True},  # Ollama's words; SmolLM2 does not think
        "'options.nonsense'": {"options": {"nonsense": 1}},
        # Ollama's think levels (gpt-oss's) are true to another thinking model (they were refused as not a bool)
        '"office" does not support thinking; leave': {"think": "high"},
        'invalid think value: "max" (must be "high", "medium", "low", true, or false)': {"think": "max"},
        "'format'": {"format": "yaml"},
        "'options.temperature' must be": {"options": {"temperature": "hot"}},  # Ollama's field, not OpenAI's
        "messages[0].images": {"messages": [{"role": "user", "content": "hi", "images": ["aGk="]}]},
        "'model' is required": {"model": ""},
    }
    for said, extra in refused.items():
        assert said in error(post(server, "/api/chat", {"model": "office", "messages": HI, **extra}), 400)
    for field in ("suffix", "template", "context", "images"):
        value = [1] if field == "context" else ["aGk="] if field == "images" else "x"
        assert f"'{field}'" in error(post(server, "/api/generate", {"model": "office", "prompt": "hi", field: value}), 400)
    # accepted and without effect here: keep_alive, load-time options, a num_ctx above a slot's (the
    # slot's context is used; tools send 8192 whatever the prompt)
    ok = post(server, "/api/chat", {"model": "office", "messages": HI, "stream": False, "keep_alive": "5m",
                                    "think": False, "options": {"num_ctx": 8192, "num_thread": 8, "num_gpu": 0,
                                                                "num_predict": 2}})
    assert ok.status_code == 200 and ok.json()["eval_count"] == 2


def test_chat_whole_and_streamed(server: RunningServer) -> None:
    body = {"model": "office", "messages": [{"role": "system", "content": "Be brief."}, *HI],
            "options": {"num_predict": 6, "temperature": 0, "seed": 3}}
    whole = post(server, "/api/chat", {**body, "stream": False}).json()
    assert whole["model"] == "office" and whole["done"] is True and whole["done_reason"] == "length"
    assert whole["message"]["role"] == "assistant" and whole["message"]["content"]
    assert whole["eval_count"] == 6 and whole["load_duration"] == 0
    assert all(isinstance(whole[k], int) and whole[k] > 0
               for k in ("total_duration", "prompt_eval_count", "prompt_eval_duration", "eval_duration"))
    assert whole["total_duration"] >= whole["eval_duration"]
    # the same prompt as the OpenAI route makes of these messages
    openai = post(server, "/v1/chat/completions", {"messages": body["messages"], "max_tokens": 1}).json()
    assert whole["prompt_eval_count"] == openai["usage"]["prompt_tokens"]

    *parts, last = lines(server, "/api/chat", body)
    assert parts and all(p["done"] is False and p["model"] == "office" for p in parts)
    assert "".join(p["message"]["content"] for p in parts) == whole["message"]["content"]
    assert last["done"] is True and last["message"] == {"role": "assistant", "content": ""}
    assert last["eval_count"] == 6 and last["done_reason"] == "length"
    # a name this server does not serve: Ollama's 404, before anything is generated
    assert error(post(server, "/api/chat", {**body, "model": "llama3"}), 404).startswith('model "llama3" not found')
    # no messages: "load the model", answered at once; with keep_alive 0 "unload", as Ollama says it
    loaded = post(server, "/api/chat", {"model": "serve-test", "messages": []}).json()
    assert loaded["done_reason"] == "load" and loaded["done"] is True and loaded["message"]["content"] == ""
    unloaded = post(server, "/api/chat", {"model": "serve-test", "messages": [], "keep_alive": 0}).json()
    assert unloaded["done_reason"] == "unload" and unloaded["done"] is True


def test_generate_templated_and_raw(server: RunningServer) -> None:
    prompt = "The capital of France is"
    options = {"num_predict": 6, "temperature": 0}
    raw = post(server, "/api/generate", {"model": "serve-test:latest", "prompt": prompt, "raw": True, "stream": False,
                                         "options": options}).json()
    assert raw["model"] == "serve-test:latest" and raw["response"] and raw["eval_count"] == 6
    completion = post(server, "/completion", {"prompt": prompt, "n_predict": 6}).json()
    assert raw["response"] == completion["content"]
    assert raw["prompt_eval_count"] == completion["tokens_evaluated"]  # the text itself, no template

    *parts, last = lines(server, "/api/generate", {"model": "serve-test", "prompt": prompt, "system": "Be brief.",
                                                   "options": options})
    assert "".join(p["response"] for p in parts) and last["done"] is True and last["response"] == ""
    templated = post(server, "/v1/chat/completions", {"messages": [{"role": "system", "content": "Be brief."},
                                                                   {"role": "user", "content": prompt}],
                                                      "max_tokens": 1}).json()
    assert last["prompt_eval_count"] == templated["usage"]["prompt_tokens"]  # the chat template's prompt
    loaded = post(server, "/api/generate", {"model": "serve-test"}).json()
    assert (loaded["response"], loaded["done_reason"], loaded["done"]) == ("", "load", True)
    assert post(server, "/api/generate", {"model": "serve-test", "keep_alive": "0s"}).json()["done_reason"] == "unload"
    assert "'system' is not used" in error(post(server, "/api/generate", {
        "model": "office", "prompt": prompt, "raw": True, "system": "Be brief."}), 400)


def test_format_and_tools(server: RunningServer) -> None:
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"]}
    tool = {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    # format with tools (refused: "'response_format' cannot be combined with tools", fields an Ollama
    # client never sent): the reply is JSON in the format or a tool call, as OpenAI answers the pair
    # (Ollama's own server holds the whole reply to the format: no tool is ever called)
    ask = 'Is Paris in France? Answer without tools: {"response": {"answer": "yes"}} or {"response": {"answer": "no"}}'
    shaped = post(server, "/api/chat", {"model": "office", "stream": False, "format": schema, "tools": [tool],
                                        "messages": [{"role": "user", "content": ask}],
                                        "options": {"num_predict": 40}}).json()
    assert shaped["done_reason"] == "stop", shaped
    if "tool_calls" in shaped["message"]:  # (which one the 135M model picks differs by machine: on 2 cores, the call)
        assert shaped["message"]["tool_calls"] == [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    else:
        assert json.loads(shaped["message"]["content"])["answer"] in ("yes", "no")
    json_mode = post(server, "/api/generate", {"model": "office", "stream": False, "format": "json", "prompt": "JSON",
                                               "options": {"num_predict": 8}}).json()
    assert json_mode["response"].lstrip().startswith("{")  # (a JSON object, cut at 8 tokens)
    ask = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]
    *parts, last = lines(server, "/api/chat", {"model": "office", "messages": ask, "tools": [tool], "format": schema,
                                               "options": {"num_predict": 32}})
    calls = [c for p in parts for c in p["message"].get("tool_calls", [])]
    assert calls == [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    assert last["done"] is True
    # the call and its result sent back, in Ollama's shapes (arguments an object, tool_name)
    history = [*ask, {"role": "assistant", "content": "", "tool_calls": calls},
               {"role": "tool", "tool_name": "get_weather", "content": "sunny"}]
    after = post(server, "/api/chat", {"model": "office", "messages": history, "tools": [tool], "stream": False,
                                       "options": {"num_predict": 8}})
    assert after.status_code == 200 and after.json()["done"] is True


def test_usage_records_and_a_client_that_leaves(server: RunningServer, data: Path) -> None:
    cancelled = server.metric("workstation:requests_cancelled_total")
    with httpx.stream("POST", f"{server.root}/api/generate", headers=server.headers(), timeout=120, json={
            "model": "office", "prompt": "Once upon a time", "raw": True, "options": {"num_predict": 900}}) as r:
        first = json.loads(next(r.iter_lines()))
        assert first["done"] is False
    # the server notices, cancels the generation and frees the slot
    wait_until(lambda: server.metric("llamacpp:requests_processing") == 0, "the slot freed", 120, every_s=0.1)
    assert server.metric("workstation:requests_cancelled_total") == cancelled + 1
    told = post(server, "/api/chat", {"model": "office", "messages": HI, "stream": False, "options": {"num_predict": 3}})
    usage = UsageLog(data / "usage.sqlite3")
    try:
        def rows() -> list[Any]:
            return [r for r in usage.records() if r.route.startswith("api/")]

        wait_until(lambda: any(r.route == "api/chat" and r.completion_tokens == 3 for r in rows())
                   and any(r.status == CLIENT_GONE for r in rows()), "the usage rows written", 60, every_s=0.1)
        chat = [r for r in rows() if r.route == "api/chat" and r.completion_tokens == 3][-1]
        assert chat.prompt_tokens == told.json()["prompt_eval_count"] and chat.status == 200
        [gone] = [r for r in rows() if r.status == CLIENT_GONE]
        assert gone.route == "api/generate"
        assert 0 < gone.completion_tokens < 900  # the tokens made before the client left still count
    finally:
        usage.close()


RULES = "List of office rules:\n- Be on time.\n- Be on time.\n- Be on time.\n"  # (it goes on repeating its last line)


def test_a_reply_cut_at_its_repeats_says_so_and_a_raw_text_runs_on(server: RunningServer) -> None:
    """/api/chat cut a reply at its repeats with ``done_reason: "stop"`` and no word of why,
    whole or streamed (the stream having sent the repeats); /api/generate's ``raw`` text, a text
    continued as /v1/completions', was cut too."""
    options = {"temperature": 0, "num_predict": 60, "repeat_penalty": 1.0}
    chat = {"model": "serve-test", "options": options,
            "messages": [{"role": "user", "content": "Write the office rules."},
                         {"role": "assistant", "content": RULES}]}
    whole = post(server, "/api/chat", {**chat, "stream": False}).json()
    streamed = lines(server, "/api/chat", chat)
    text = whole["message"]["content"]
    assert text == "- Be on time." and whole["done_reason"] == "stop"
    for done in (whole, streamed[-1]):
        assert (done["workstation_stop"], done["loop_kept"]) == ("loop", len(text))
        assert done["eval_count"] == whole["eval_count"] > 6  # (the tokens generated, the repeats' too)
    assert "".join(o["message"]["content"] for o in streamed)[:len(text)] == text
    raw = {"model": "serve-test", "options": options, "prompt": RULES, "raw": True}
    generated = post(server, "/api/generate", {**raw, "stream": False}).json()
    assert generated["done_reason"] == "length" and generated["response"].count("- Be on time.") > 5
    assert "workstation_stop" not in generated
    asked = post(server, "/api/generate", {**raw, "stream": False, "stop_on_loop": True}).json()
    assert asked["response"] == "- Be on time." and asked["workstation_stop"] == "loop"
