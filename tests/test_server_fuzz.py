"""Bounded fuzz runs (hypothesis) of HTTP request bodies against a running ``workstation serve``
on loopback: chat, completion and token requests with wrong types, odd numbers, lone
surrogates, nesting and random bytes. Every answer is a success or an OpenAI-shaped error
below 500; the server's log holds no traceback and ``/health`` answers at the end. Generation
is bounded (the profile's max_tokens is 2, and a body may only ask for a few tokens), and the
run is derandomized, so it is the same each time (``pytest -s`` shows the counts)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import RunningServer, serve, write_profile

RAN: Counter[str] = Counter()
FUZZ = settings(
    max_examples=120,
    deadline=None,  # no timed assertions on a shared machine
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
ANSWERS = {200, 400, 401, 404, 405, 413, 415, 429, 503}


@pytest.fixture(scope="module")
def server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    profile = write_profile(
        tmp_path_factory.mktemp("serve-fuzz"), smollm2_path,
        sampling={"temperature": 0.0, "max_tokens": 2, "seed": 1, "repeat_penalty": 1.0},
    )
    with serve(profile, "--parallel", "2", "--queue", "4", "--max-body", "65536", "--max-messages", "16") as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.root, timeout=120) as client:
        yield client


# --- strategies ------------------------------------------------------------------------------------
ODD_TEXT = st.sampled_from(["", "\ud800", "x\udfff", "\ud83e\udd99", "<|im_start|>", "\x00", "é" * 3, " " * 50])
TEXT = st.one_of(st.text(max_size=30), ODD_TEXT)
LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True), TEXT
)
JSON_VALUE = st.recursive(
    LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12
)
FEW_TOKENS = st.sampled_from([1, 2, 3, 0, -1, 2**40, 2**70, "2", 1.5, None, True])
PART = st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}), JSON_VALUE)
MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "developer", "user", "assistant", "tool", "bogus"]) | JSON_VALUE},
        optional={"content": TEXT | st.lists(PART, max_size=3) | JSON_VALUE},
    ),
    JSON_VALUE,
)
COMMON: dict[str, st.SearchStrategy[Any]] = {
    "model": TEXT | JSON_VALUE,
    "max_tokens": FEW_TOKENS,
    "max_completion_tokens": FEW_TOKENS,
    "temperature": st.sampled_from([0, 0.7, 5.0001, -1, float("nan"), float("inf"), "hot", None]),
    "top_p": LEAF,
    "top_k": LEAF,
    "min_p": LEAF,
    "seed": LEAF,
    "n": st.sampled_from([1, 2, 0, None, "1"]),
    "stop": st.one_of(TEXT, st.lists(TEXT, max_size=20), JSON_VALUE),
    "stream": st.one_of(st.booleans(), LEAF),
    "stream_options": st.one_of(st.fixed_dictionaries({"include_usage": LEAF}), JSON_VALUE),
    "ignore_eos": st.one_of(st.booleans(), LEAF),
}
CHAT = st.fixed_dictionaries({"messages": st.lists(MESSAGE, max_size=4) | JSON_VALUE}, optional=COMMON)
COMPLETION = st.fixed_dictionaries(
    {"prompt": TEXT | st.lists(st.integers(-5, 60_000), max_size=6) | JSON_VALUE}, optional=COMMON
)
NATIVE = st.fixed_dictionaries(  # llama-server's /completion (n_predict -1 would run to the context's end)
    {"prompt": TEXT | st.lists(st.integers(-5, 60_000) | TEXT, max_size=6) | JSON_VALUE},
    optional={
        **COMMON,
        "n_predict": st.sampled_from([0, 1, 2, -2, 2**40, "2", 1.5, None, True]),
        "n_probs": FEW_TOKENS,
        "id_slot": FEW_TOKENS,
        "return_tokens": LEAF,
        "cache_prompt": LEAF,
        "mirostat": LEAF,
        "samplers": st.one_of(TEXT, JSON_VALUE),
    },
)
TOKENIZE = st.fixed_dictionaries(
    {"content": TEXT | JSON_VALUE},
    optional={"add_special": LEAF, "parse_special": LEAF, "with_pieces": LEAF},
)
DETOKENIZE = st.fixed_dictionaries({"tokens": st.lists(st.integers(-5, 60_000), max_size=8) | JSON_VALUE})
TEMPLATE = st.fixed_dictionaries({"messages": st.lists(MESSAGE, max_size=4) | JSON_VALUE})
REQUESTS = st.one_of(
    st.tuples(st.just("/v1/chat/completions"), CHAT),
    st.tuples(st.just("/v1/completions"), COMPLETION),
    st.tuples(st.just("/completion"), NATIVE),
    st.tuples(st.just("/tokenize"), TOKENIZE),
    st.tuples(st.just("/detokenize"), DETOKENIZE),
    st.tuples(st.just("/apply-template"), TEMPLATE),
    st.tuples(st.sampled_from(["/v1/chat/completions", "/tokenize", "/v1/completions"]), JSON_VALUE),
)


def _check_answer(response: httpx.Response) -> str:
    assert response.status_code in ANSWERS, (response.status_code, response.text[:300])
    if response.status_code != 200:
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and isinstance(error["message"], str)
        return str(response.status_code)
    if response.headers["content-type"].startswith("text/event-stream"):
        events = [line for line in response.text.split("\n\n") if line]
        assert all(e.startswith("data: ") for e in events)
        last = "{}" if events[-1] == "data: [DONE]" else events[-1][6:]
        # OpenAI's streams end with [DONE], llama-server's /completion with its final object
        assert events[-1] == "data: [DONE]" or "error" in json.loads(last) or json.loads(last).get("stop") is True
        return "200 stream"
    response.json()
    return "200"


@given(request=REQUESTS)
@FUZZ
def test_fuzz_json_bodies(http: httpx.Client, request: tuple[str, Any]) -> None:
    path, body = request
    # ensure_ascii writes lone surrogates as \ud800 escapes; NaN and Infinity as Python's json does
    data = json.dumps(body, ensure_ascii=True).encode()
    response = http.post(path, content=data, headers={"Content-Type": "application/json"})
    RAN[f"json {_check_answer(response)}"] += 1


@given(data=st.one_of(st.binary(max_size=200), st.text(max_size=100).map(lambda t: t.encode("utf-8", "replace"))))
@settings(FUZZ, max_examples=60)
def test_fuzz_raw_bodies(http: httpx.Client, data: bytes) -> None:
    response = http.post("/v1/chat/completions", content=data, headers={"Content-Type": "application/json"})
    RAN[f"raw {_check_answer(response)}"] += 1


def test_fuzz_server_still_serving(server: RunningServer) -> None:
    print(f"\nfuzz serve: {dict(sorted(RAN.items()))}")
    assert sum(RAN.values()) >= 150
    assert any(k.startswith("json 200") for k in RAN) and RAN["json 400"] > 0  # both outcomes reached
    assert httpx.get(f"{server.root}/health", timeout=30).json()["status"] == "ok"
    log = server.log_text()
    assert "Traceback" not in log and "failed:" not in log, log
