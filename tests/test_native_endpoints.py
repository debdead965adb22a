"""llama-server's native endpoints on a real ``workstation serve`` (real model, real HTTP):
``/completion`` plain and streamed, ``/props``, ``/slots``, slot files, refused options,
aliases, ``--no-metrics``, two addresses and a per-slot context below 256 (issue 17)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import RunningServer, serve, write_profile

from workstation.core.server.unsupported import LOOKED_AT

KEY = "native-key"
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def saves(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("slot-saves")


@pytest.fixture(scope="module")
def server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory, saves: Path) -> Iterator[RunningServer]:
    profile = write_profile(tmp_path_factory.mktemp("native"), smollm2_path)
    with serve(
        profile, "--parallel", "2", "--slot-save-path", str(saves), "--alias", "office-model",
        "--alias", "gpt-4o-mini,office-model", api_key=KEY,
    ) as srv:
        yield srv


@pytest.fixture(scope="module")
def small(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """No metrics, two loopback addresses, slots of 128 tokens, no slot save folder; a key."""
    profile = write_profile(tmp_path_factory.mktemp("small"), smollm2_path, context=128)
    with serve(profile, "--parallel", "1", "--no-metrics", "--host", "127.0.0.1,127.0.0.2", api_key=KEY) as srv:
        yield srv


def post(server: RunningServer, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.root}{path}", json=body, headers=server.headers(), timeout=120)


def events(server: RunningServer, body: dict[str, Any]) -> list[str]:
    with httpx.stream("POST", f"{server.root}/completion", json={**body, "stream": True},
                      headers=server.headers(), timeout=120) as r:
        assert r.status_code == 200
        return [line for line in r.iter_lines() if line]


def test_completion_plain_and_streamed(server: RunningServer) -> None:
    done = post(server, "/completion", {"prompt": PROMPT, "n_predict": 6, "return_tokens": True})
    assert done.status_code == 200
    out = done.json()
    assert out["stop"] is True and out["stop_type"] == "limit" and out["stopping_word"] == ""
    assert out["content"] and out["tokens_predicted"] == 6 and len(out["tokens"]) == 6
    assert out["truncated"] is False and out["model"] == "serve-test" and out["id_slot"] in (0, 1)
    prompt_ids = post(server, "/tokenize", {"content": PROMPT, "add_special": True}).json()["tokens"]
    assert out["tokens_evaluated"] == len(prompt_ids)
    assert PROMPT in out["prompt"]
    assert out["generation_settings"]["n_predict"] == 6 and out["generation_settings"]["temperature"] == 0.0
    assert out["timings"]["predicted_n"] == 6
    assert out["timings"]["prompt_n"] + out["timings"]["cache_n"] == len(prompt_ids)
    assert post(server, "/detokenize", {"tokens": out["tokens"]}).json()["content"] == out["content"]
    assert out["has_new_line"] == ("\n" in out["content"])

    lines = events(server, {"prompt": PROMPT, "n_predict": 6})
    assert all(line.startswith("data: {") for line in lines)  # no [DONE]: llama-server's native stream
    chunks = [json.loads(line[6:]) for line in lines]
    *partial, last = chunks
    assert partial and all(c["stop"] is False for c in partial)
    assert "".join(c["content"] for c in partial) == out["content"]
    assert [t for c in partial for t in c["tokens"]] == out["tokens"]
    assert last["stop"] is True and last["content"] == "" and last["tokens_predicted"] == 6
    # the same prompt again: read from the slot's cache, but its last token (read for its logits)
    assert (last["timings"]["cache_n"], last["timings"]["prompt_n"]) == (len(prompt_ids) - 1, 1)

    # llama-server's return_progress: how far a long prompt has been read, before the first word
    long = "The order lists " + "staplers, paper, ink, " * 100
    read = [json.loads(line[6:]) for line in events(server, {"prompt": long, "n_predict": 1, "return_progress": True})]
    progress = [c["prompt_progress"] for c in read if "prompt_progress" in c]
    assert progress and all(c["content"] == "" and c["stop"] is False for c in read if "prompt_progress" in c)
    assert all(p["processed"] - p["cache"] >= 512 and p["total"] == read[-1]["tokens_evaluated"] for p in progress)
    assert "prompt_progress" not in read[-1] and "prompt_progress" in read[0]

    # the prompt as token ids answers the same
    by_ids = post(server, "/completion", {"prompt": prompt_ids, "n_predict": 6}).json()
    assert by_ids["content"] == out["content"]

    # token ids and text mixed: each text part tokenized in place (BOS only for a leading text)
    head = post(server, "/tokenize", {"content": "The capital of"}).json()["tokens"]
    tail = post(server, "/tokenize", {"content": " France is"}).json()["tokens"]
    mixed = post(server, "/completion", {"prompt": [*head, " France is"], "n_predict": 1}).json()
    assert mixed["tokens_evaluated"] == len(head) + len(tail) and mixed["prompt"].endswith("The capital of France is")
    # texts alone are that many prompts to llama-server (an array of results): refused, not joined
    for many in (["Hello", "World"], ["Hello", [1, 2]]):
        r = post(server, "/completion", {"prompt": many, "n_predict": 1})
        assert r.status_code == 400 and "'prompt' holds 2 prompts" in r.json()["error"]["message"], r.text

    # a stop word ends the reply before it, and is named
    word = out["content"].split()[-1]
    stopped = post(server, "/completion", {"prompt": PROMPT, "n_predict": 6, "stop": [word]}).json()
    assert stopped["stop_type"] == "word" and stopped["stopping_word"] == word
    assert stopped["content"] == out["content"][: out["content"].index(word)]

    # n_predict 0 reads the prompt and generates nothing
    none = post(server, "/completion", {"prompt": PROMPT, "n_predict": 0}).json()
    assert none["content"] == "" and none["tokens_predicted"] == 0


def test_cache_prompt_false_reads_the_whole_prompt_again(server: RunningServer) -> None:
    """It was refused ("this server always reuses a cached prefix"), and a temperature-0 reply
    then depended on what the server had answered before: a reused prefix's cells were made in
    other batches, whose rounding tipped close choices (a summary's date changed)."""
    body = {"prompt": PROMPT + " a city that", "n_predict": 8, "temperature": 0}
    first = post(server, "/completion", {**body, "cache_prompt": False}).json()
    again = post(server, "/completion", body).json()
    assert again["timings"]["cache_n"] > 0  # reused, as before
    fresh = post(server, "/completion", {**body, "cache_prompt": False}).json()
    assert fresh["timings"]["cache_n"] == 0 and fresh["timings"]["prompt_n"] == first["timings"]["prompt_n"]
    assert fresh["content"] == first["content"]


def test_presence_and_frequency_penalties_change_the_reply(server: RunningServer) -> None:
    """They were refused above 0 ("not supported by this server"), where llama-server and
    OpenAI take them."""
    body = {"prompt": "Say it again and again: yes yes yes yes yes yes yes", "n_predict": 12, "temperature": 0}
    plain = post(server, "/completion", body).json()
    for name in ("presence_penalty", "frequency_penalty"):
        out = post(server, "/completion", {**body, name: 2.0}).json()
        assert out["generation_settings"][name] == 2.0 and out["content"] != plain["content"], (name, out["content"])


def test_unsupported_options_are_refused_by_name(server: RunningServer) -> None:
    for body, name in [
        ({"prompt": PROMPT, "mirostat": 2}, "mirostat"),
        ({"prompt": PROMPT, "typical_p": 0.5}, "typical_p"),
        ({"prompt": PROMPT, "samplers": ["temperature", "top_k"]}, "samplers"),
    ]:
        r = post(server, "/completion", body)
        assert r.status_code == 400, body
        err = r.json()["error"]
        assert f"'{name}' is not supported by this server" in err["message"] and err["param"] == name
    chat = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    for extra, name in [({"dry_multiplier": 0.8}, "dry_multiplier"), ({"xtc_probability": 0.5}, "xtc_probability"),
                        # OpenAI's answer in sound and vLLM's least length were answered in text, any length
                        ({"modalities": ["text", "audio"]}, "modalities"), ({"audio": {"voice": "alloy"}}, "audio"),
                        ({"min_tokens": 5}, "min_tokens")]:
        r = post(server, "/v1/chat/completions", {**chat, **extra})
        assert r.status_code == 400 and r.json()["error"]["param"] == name
    assert post(server, "/v1/chat/completions", {**chat, "modalities": ["text"], "min_tokens": 0}).status_code == 200
    chain = "root ::= r0\n" + "".join(f"r{i} ::= r{i + 1}\n" for i in range(5000)) + 'r5000 ::= "x"\n'
    r = post(server, "/v1/chat/completions", {**chat, "grammar": chain})  # (100,000 such rules crashed it)
    assert r.status_code == 400 and r.json()["error"]["param"] == "grammar" and "5,002 rules" in r.text
    r = post(server, "/v1/chat/completions", {**chat, "user": 123})  # OpenAI's end-user id is a string
    assert r.status_code == 400 and r.json()["error"]["param"] == "user"
    assert post(server, "/v1/chat/completions", {**chat, "user": "ayla@office"}).status_code == 200
    # the values llama-server's clients send by default leave those options off: accepted
    defaults = {"mirostat": 0, "typical_p": 1.0, "cache_prompt": True, "dry_multiplier": 0.0, "dry_base": 1.75,
                "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc",
                             "temperature"], "n_probs": 2}
    assert post(server, "/completion", {"prompt": PROMPT, "n_predict": 2, **defaults}).status_code == 200
    # a misspelt field, or another server's way to constrain the reply, is OpenAI's 400 naming it (dropped without
    # a word, max_token let the reply run on, vLLM's guided_json left it unconstrained); what OpenAI's SDKs,
    # llama-server's web UI and this app's own clients send is taken, and so is another server's harmless extra,
    # as llama-server, Ollama and LM Studio take it (a client made for them kept working)
    r = post(server, "/v1/chat/completions", {**chat, "guided_json": {"type": "object"}})
    assert r.status_code == 400 and r.json()["error"] == {
        "message": "Unknown parameter: 'guided_json'. This server constrains a reply with response_format "
                   "(json_schema or json_object), json_schema or grammar.", "type": "invalid_request_error",
        "param": "guided_json", "code": "unknown_parameter"}
    r = post(server, "/v1/chat/completions", {**chat, "max_token": 2})
    assert r.status_code == 400 and r.json()["error"]["message"] == "Unknown parameter: 'max_token'. Did you mean " \
        "'max_tokens'?" and r.json()["error"]["param"] == "max_token"
    assert post(server, "/v1/chat/completions", {**chat, "top_a": 0, "include_reasoning": True, "models": ["m"],
                                                  "num_keep": 4}).status_code == 200  # (like 'model', 'n_keep')
    # past the first LOOKED_AT unknown fields none is compared (each comparison held the server's loop: a 4 MB
    # body of made-up names held every client for 35 s); another server's constraint is still refused
    made_up = {f"zq{i:03d}": 0 for i in range(LOOKED_AT)}
    assert post(server, "/v1/chat/completions", {**chat, **made_up, "max_token": 2}).status_code == 200
    r = post(server, "/v1/chat/completions", {**chat, **made_up, "guided_json": {}})
    assert r.status_code == 400 and r.json()["error"]["param"] == "guided_json"
    webui = {**defaults, "reasoning_format": "auto", "dynatemp_range": 0, "dynatemp_exponent": 1, "xtc_threshold": 0.1,
             "repeat_last_n": 64, "dry_allowed_length": 2, "dry_penalty_last_n": -1, "timings_per_token": False,
             "return_progress": False, "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.0}
    sdk = {"model": "serve-test", "stream": False, "stream_options": None, "store": False, "metadata": {}, "n": 1,
           "parallel_tool_calls": True, "service_tier": "auto", "logprobs": False, "seed": 1, "top_p": 1,
           "temperature": 0, "presence_penalty": 0, "frequency_penalty": 0, "reasoning_effort": "low", "user": "x"}
    assert post(server, "/v1/chat/completions", {**chat, **webui, **sdk, "conversation_tag": "t",
                                                  "chat_template_kwargs": {}}).status_code == 200
    r = post(server, "/completion", {"prompt": PROMPT, "n_probs": -1})
    assert r.status_code == 400 and r.json()["error"]["param"] == "n_probs"
    r = post(server, "/completion", {"prompt": PROMPT, "id_slot": 2})
    assert r.status_code == 400 and r.json()["error"]["param"] == "id_slot"


def test_the_template_fields_and_n_predict_say_only_what_this_server_does(server: RunningServer) -> None:
    """vLLM's and llama-server's add_generation_prompt and continue_final_message were read by
    no one: false was answered as if left out."""
    ask = [{"role": "user", "content": "Name a colour."}]
    begun = [*ask, {"role": "assistant", "content": "The colour is"}]
    for messages, extra, status, said in [
        (ask, {"add_generation_prompt": False}, 400, "'add_generation_prompt' false (the prompt without the assistant"),
        (ask, {"add_generation_prompt": True}, 200, ""),
        # vLLM's way to go on from a reply (it refuses both true together)
        (begun, {"add_generation_prompt": False, "continue_final_message": True}, 200, ""),
        (begun, {"add_generation_prompt": False}, 200, ""),
        (begun, {"continue_final_message": False}, 400, "goes on from a last assistant message"),
        (ask, {"continue_final_message": True}, 400, "the last message is not the assistant's"),
        (begun, {"continue_final_message": "yes"}, 400, "must be true or false"),
        (begun, {"continue_final_message": True}, 200, ""),
        (ask, {"continue_final_message": False}, 200, ""),
        # /completion's "the prompt alone" is not an OpenAI route's: it generated one token
        (ask, {"n_predict": 0}, 400, "'n_predict' 0 (only reading the prompt) is served on /completion"),
        (ask, {"n_predict": 1}, 200, ""),
    ]:
        r = post(server, "/v1/chat/completions", {"messages": messages, "max_tokens": 2, **extra})
        assert r.status_code == status, (extra, r.text)
        if status == 400:
            err = r.json()["error"]
            assert said in err["message"] and err["param"] == next(iter(extra)), err


def test_n_probs_gives_completion_probabilities(server: RunningServer) -> None:
    body = {"prompt": PROMPT, "n_predict": 3, "n_probs": 2, "return_tokens": True}
    out = post(server, "/completion", body).json()
    probs = out["completion_probabilities"]
    assert [p["id"] for p in probs] == out["tokens"]
    assert all(len(p["top_logprobs"]) == 2 and p["top_logprobs"][0]["id"] == p["id"] for p in probs)  # greedy
    chunks = [json.loads(line[6:]) for line in events(server, body)]
    streamed = [p for c in chunks[:-1] for p in c.get("completion_probabilities", [])]
    assert [p["id"] for p in streamed] == out["tokens"]
    r = post(server, "/completion", {"prompt": PROMPT, "logprobs": 2})
    assert r.status_code == 400 and r.json()["error"]["param"] == "logprobs"


def test_props_and_slots(server: RunningServer, smollm2_path: Path) -> None:
    props = httpx.get(f"{server.root}/props", headers=server.headers()).json()
    assert props["total_slots"] == 2 and props["default_generation_settings"]["n_ctx"] == 1024
    assert props["default_generation_settings"]["params"]["temperature"] == 0.0
    assert props["model_path"] == smollm2_path.name  # the file's name, never its folder
    assert "{%" in props["chat_template"] and props["modalities"]["vision"] is False
    assert props["build_info"]
    # /detokenize gives special tokens as their text, as llama-server does
    bos = post(server, "/tokenize", {"content": props["bos_token"]}).json()["tokens"]
    assert len(bos) == 1 and post(server, "/detokenize", {"tokens": bos}).json()["content"] == props["bos_token"]
    assert httpx.get(f"{server.root}/props").status_code == 401

    body = {"prompt": "Once upon a time", "n_predict": 400, "ignore_eos": True, "stream": True, "id_slot": 1}
    with httpx.stream("POST", f"{server.root}/completion", json=body, headers=server.headers(), timeout=120) as r:
        lines = r.iter_lines()  # kept alive: a collected iterator closes its response
        while not next(lines).startswith("data:"):
            pass  # generating now
        slots = httpx.get(f"{server.root}/slots", headers=server.headers(), timeout=60).json()
        busy = httpx.post(f"{server.root}/slots/1?action=save", json={"filename": "busy.bin"},
                          headers=server.headers(), timeout=60)
    assert [s["id"] for s in slots] == [0, 1]
    assert slots[1]["is_processing"] is True and slots[1]["id_task"] > 0 and slots[0]["is_processing"] is False
    assert slots[1]["params"]["n_predict"] == 400 and slots[1]["params"]["ignore_eos"] is True
    assert slots[1]["next_token"][0]["n_decoded"] >= 1 and slots[1]["n_ctx"] == 1024
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "slot_busy"


def test_slot_save_erase_restore_continues_the_same(server: RunningServer, saves: Path) -> None:
    prompt = "A note about the office kettle: it"  # a prompt no other test sends
    first = post(server, "/completion", {"prompt": prompt, "n_predict": 8, "id_slot": 0}).json()
    assert first["id_slot"] == 0
    url = f"{server.root}/slots/0"
    h = server.headers()
    saved = httpx.post(f"{url}?action=save", json={"filename": "kettle.bin"}, headers=h, timeout=60).json()
    assert saved["id_slot"] == 0 and saved["filename"] == "kettle.bin"
    assert saved["n_saved"] >= first["tokens_evaluated"] and saved["n_written"] > 0
    assert (saves / "kettle.bin").stat().st_size == saved["n_written"] and "save_ms" in saved["timings"]
    erased = httpx.post(f"{url}?action=erase", json={}, headers=h, timeout=60).json()
    assert erased == {"id_slot": 0, "n_erased": saved["n_saved"]}
    restored = httpx.post(f"{url}?action=restore", json={"filename": "kettle.bin"}, headers=h, timeout=60).json()
    assert restored["n_restored"] == saved["n_saved"] > 0 and restored["n_read"] == saved["n_written"]
    again = post(server, "/completion", {"prompt": prompt, "n_predict": 8, "id_slot": 0}).json()
    assert again["content"] == first["content"]
    assert again["timings"]["cache_n"] == again["tokens_evaluated"] - 1  # all but the last from the file

    # names stay inside the folder; bad files and bad requests get one sentence each
    for name in ["../escape.bin", "/tmp/escape.bin", "sub/x.bin", "..", "", "a\\b", 5]:
        r = httpx.post(f"{url}?action=save", json={"filename": name}, headers=h, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"] == "filename", name
    assert not (saves.parent / "escape.bin").exists() and not Path("/tmp/escape.bin").exists()
    (saves / "junk.bin").write_bytes(b"not a state file")
    r = httpx.post(f"{url}?action=restore", json={"filename": "junk.bin"}, headers=h, timeout=60)
    assert r.status_code == 400 and "junk.bin" in r.json()["error"]["message"]
    r = httpx.post(f"{url}?action=save", json={"filename": "junk.bin"}, headers=h, timeout=60)  # not written over
    assert r.status_code == 400 and "not a slot file this server wrote" in r.json()["error"]["message"]
    assert (saves / "junk.bin").read_bytes() == b"not a state file"
    again_saved = httpx.post(f"{url}?action=save", json={"filename": "kettle.bin"}, headers=h, timeout=60)
    assert again_saved.status_code == 200  # its own file: saved over
    r = httpx.post(f"{url}?action=restore", json={"filename": "missing.bin"}, headers=h, timeout=60)
    assert r.status_code == 400 and "missing.bin" in r.json()["error"]["message"]
    assert httpx.post(f"{server.root}/slots/7?action=erase", json={}, headers=h).json()["error"]["param"] == "id_slot"
    assert httpx.post(f"{url}?action=dance", json={}, headers=h).json()["error"]["param"] == "action"


def test_aliases_are_listed_and_accepted(server: RunningServer) -> None:
    models = httpx.get(f"{server.base_url}/models", headers=server.headers()).json()["data"]
    assert [m["id"] for m in models] == ["serve-test", "office-model", "gpt-4o-mini"]
    r = post(server, "/v1/chat/completions",
             {"model": "office-model", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2})
    assert r.status_code == 200 and r.json()["model"] == "office-model"
    # a name the server does not know (a tool's hard-wired one) is answered, as llama-server
    # does, but the reply says which model answered (it echoed "gpt-4", as if that had)
    r = post(server, "/v1/chat/completions",
             {"model": "gpt-4", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2})
    assert r.status_code == 200 and r.json()["model"] == "serve-test"


def test_no_metrics_two_addresses_and_a_small_slot_context(small: RunningServer) -> None:
    port = small.root.rsplit(":", 1)[1]
    assert "http://127.0.0.2:" + port in small.log[0]
    keyed = small.headers()
    for host in ("127.0.0.1", "127.0.0.2"):
        assert httpx.get(f"http://{host}:{port}/health", timeout=30).json()["status"] == "ok"
        r = httpx.get(f"http://{host}:{port}/metrics", headers=keyed, timeout=30)
        assert r.status_code == 501 and "--no-metrics" in r.json()["error"]["message"]
    assert httpx.get(f"{small.root}/props", headers=keyed, timeout=30).json()["default_generation_settings"]["n_ctx"] == 128
    done = httpx.post("http://127.0.0.2:" + port + "/completion", json={"prompt": PROMPT, "n_predict": 4},
                      headers=keyed, timeout=120).json()
    assert done["tokens_predicted"] == 4 and done["content"]
    r = httpx.post(f"{small.root}/slots/0?action=save", json={"filename": "x.bin"}, headers=keyed, timeout=30)
    assert r.status_code == 501 and "--slot-save-path" in r.json()["error"]["message"]
    # without the key, what this server does not do is not told either: the key is checked first, as on
    # every route (the 501 on /metrics answered before it)
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        assert httpx.get(f"{small.root}/metrics", headers=headers, timeout=30).status_code == 401
        assert httpx.post(f"{small.root}/slots/0?action=save", json={"filename": "x.bin"}, headers=headers,
                          timeout=30).status_code == 401


def test_serve_takes_the_profiles_slots_and_system_prompt_and_n_predict(smollm2_path: Path, tmp_path: Path) -> None:
    """Three ways serve answered otherwise than its profile and llama-server: the profile's
    `parallel` was ignored (4 slots whatever it said); a question with no system message got
    the model's default system prompt, not the profile's (so `chat -p` on that profile gave
    another reply); and a chat completion ignored n_predict (which wins over max_tokens). And a
    profile's stop texts, which a profile could not have."""
    profile = write_profile(tmp_path, smollm2_path, parallel=2, system_prompt="Answer in French.",
                            sampling={"temperature": 0.0, "max_tokens": 32, "seed": 1, "repeat_penalty": 1.0,
                                      "stop": [" "]})
    with serve(profile) as srv:
        # in words: how many people at once, how long a conversation ("with 2 slots of 4096 tokens")
        assert re.search(r"\. It answers up to 2 people at once, each conversation up to about [\d,]+ words "
                         r"\([\d,]+ tokens\)\. Ctrl-C stops it\.$", srv.log_text(), re.M), srv.log_text()
        assert httpx.get(f"{srv.root}/props", headers=srv.headers()).json()["total_slots"] == 2
        bare = [{"role": "user", "content": "Hello"}]
        prompt = post(srv, "/apply-template", {"messages": bare}).json()["prompt"]
        assert "Answer in French." in prompt
        own = [{"role": "system", "content": "Be brief."}, *bare]
        prompt = post(srv, "/apply-template", {"messages": own}).json()["prompt"]
        assert "Be brief." in prompt and "Answer in French." not in prompt  # the request's own wins
        reply = post(srv, "/v1/chat/completions", {"messages": bare, "n_predict": 3, "max_tokens": 9,
                                                   "ignore_eos": True, "stop": ["zzz"]}).json()
        assert reply["usage"]["completion_tokens"] == 3, reply  # (its own stop replaced the profile's)
        # the profile's stop texts where the request has none: the reply ends before its first space
        reply = post(srv, "/v1/chat/completions", {"messages": bare}).json()
        assert reply["choices"][0]["finish_reason"] == "stop" and " " not in reply["choices"][0]["message"]["content"]
        assert reply["usage"]["completion_tokens"] < 32, reply
        # a request's own stop, none included, replaces the profile's; and a reply under a grammar
        # (a reply format, a tool call) is never cut by them
        free = post(srv, "/v1/chat/completions", {"messages": bare, "stop": []}).json()
        assert " " in free["choices"][0]["message"]["content"], free
        schema = {"type": "object", "properties": {"a": {"type": "string", "enum": ["x y"]}}, "required": ["a"]}
        shaped = post(srv, "/v1/chat/completions", {"messages": bare, "response_format": {
            "type": "json_schema", "json_schema": {"name": "a", "schema": schema}}}).json()
        assert json.loads(shaped["choices"][0]["message"]["content"]) == {"a": "x y"}, shaped


def test_a_last_assistant_message_is_a_reply_to_go_on_from(server: RunningServer) -> None:
    """llama-server goes on from a last assistant message (--prefill-assistant, on by default):
    ours closed it and began a new reply, so `["apple", "ban` came back as a fresh answer."""
    begun = [{"role": "user", "content": "What is the capital of France?"},
             {"role": "assistant", "content": "The capital of France is"}]
    prompt = post(server, "/apply-template", {"messages": begun}).json()["prompt"]
    assert prompt.endswith("assistant\nThe capital of France is"), prompt  # the turn left open
    whole = post(server, "/apply-template", {"messages": begun[:1]}).json()["prompt"]
    assert prompt == whole + "The capital of France is"
    reply = post(server, "/v1/chat/completions", {"messages": begun, "max_tokens": 6, "temperature": 0}).json()
    text = reply["choices"][0]["message"]["content"]
    assert "Paris" in text and not text.lstrip().startswith("The capital"), text  # only what follows
    tokens = post(server, "/tokenize", {"content": prompt, "parse_special": True}).json()["tokens"]
    assert reply["usage"]["prompt_tokens"] == len(tokens)
    # a tool call's turn, or one with no text, stays a turn of the history
    called = [begun[0], {"role": "assistant", "content": ""}]
    assert post(server, "/apply-template", {"messages": called}).json()["prompt"] != whole
