"""Structured output (issue 17, item 1): a grammar or JSON schema constrains the reply through
llama.cpp's grammar sampler, in the engine, the server (the official ``openai`` client and
llama-server's fields), ``chat --json-schema``, eval tasks and a ``speculative: lookup`` profile.
Real SmolLM2, real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import llama_cpp
import pytest
from conftest import make_profile, write_profile_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import RunningServer, openai_client, served_module

from workstation.cli import main
from workstation.core.engine import Engine
from workstation.core.errors import EngineError
from workstation.core.evaluate import TaskSetError, run_tasks, task_set_from_data
from workstation.core.grammar import GrammarError, compile_grammar
from workstation.core.profile_check import profile_from_dict
from workstation.core.profiles import Constraints, Sampling
from workstation.core.remote import RemoteEngine
from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings
from workstation.core.sampling import SamplerChain
from workstation.core.server.protocol import ApiError
from workstation.core.server.structured import parse_output_format
from workstation.core.structured_output import (
    SchemaError,
    check_reply,
    schema_constraints,
    schema_grammar,
    unbound_keywords,
)

YES_NO = 'root ::= "yes" | "no"'
ASK = [{"role": "user", "content": "Is the sky blue on a clear day? Answer yes or no."}]
INVOICE = [{"role": "user", "content": "Invoice 4711 from ACME, urgent: 3 boxes of paper (sku P-10). "
            "Give it as JSON."}]
# nested object, array of objects, enum, required fields; short strings keep replies short
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "vendor": {"type": "string", "maxLength": 12},
        "priority": {"enum": ["low", "normal", "urgent"]},
        "lines": {
            "type": "array",
            "maxItems": 2,
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string", "maxLength": 8}, "qty": {"type": "integer"}},
                "required": ["sku", "qty"],
                "additionalProperties": False,
            },
        },
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 10}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
    "required": ["vendor", "priority", "lines", "address"],
    "additionalProperties": False,
}


# a schema with a short reply, where the field, not the schema, is what a test is about
ANSWER: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}


def greedy(max_tokens: int, **kw: Any) -> Sampling:
    return Sampling(temperature=0.0, repeat_penalty=1.0, max_tokens=max_tokens, seed=1, **kw)


def assert_follows_schema(text: str) -> dict[str, Any]:
    check = check_reply(text, SCHEMA)
    assert check.valid, (check.error, text)
    assert check.value["priority"] in ("low", "normal", "urgent")
    assert isinstance(check.value["address"]["city"], str)
    return check.value


# --- the engine ----------------------------------------------------------------------------------
def test_grammar_decides_the_reply_and_its_end(engine: Engine) -> None:
    free = engine.run_chat(ASK, greedy(12))
    final = engine.run_chat(ASK, greedy(12), constraints=Constraints(grammar=YES_NO))
    assert final.text in ("yes", "no") and final.text != free.text
    assert final.metrics.stop_reason == "eos"  # the complete grammar allowed only an end
    # ignore_eos does not keep a complete grammar going: it still ends, long before max_tokens
    forced = engine.run_chat(ASK, greedy(30, ignore_eos=True), constraints=Constraints(grammar=YES_NO))
    assert forced.text in ("yes", "no") and forced.metrics.stop_reason == "eos"


def test_a_profiles_stop_text_never_cuts_a_grammars_reply(engine: Engine) -> None:
    """A profile's stop texts ("e", "o" here; "\\n" or "}" in practice) cut a reply the grammar
    made short ("y" for "yes"): a JSON reply came back unparseable."""
    final = engine.run_chat(ASK, greedy(12, stop=["e", "o"]), constraints=Constraints(grammar=YES_NO))
    assert final.text in ("yes", "no")


def test_schema_strings_hold_no_raw_control_characters(engine: Engine) -> None:
    """A string in a schema's reply never holds a raw line break (not JSON), even when the
    model wants one badly: here a bias pushes the line-break token hard."""
    newline = engine.model.tokenize("\n", False, False)
    assert len(newline) == 1
    # (a bounded string: the reply must end well within its tokens, so it is always checked whole;
    # it was checked only where it happened to end, and one cut by its length passed unread)
    city = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24}}, "required": ["city"]}
    shape = schema_constraints(city)
    constraints = Constraints(grammar=shape.grammar, json_schema=city, logit_bias={newline[0]: 20.0})
    reply = engine.run_chat([{"role": "user", "content": "Name a city in France."}], greedy(80),
                            constraints=constraints)
    assert not any(ord(c) < 0x20 for c in reply.text), reply.text
    assert reply.metrics.stop_reason == "eos", (reply.metrics.stop_reason, reply.text)
    check = check_reply(reply.text, city)
    assert check.valid, (check.error, reply.text)
    assert isinstance(check.value["city"], str) and not any(ord(c) < 0x20 for c in check.value["city"])


def test_ignore_eos_with_an_open_grammar_runs_to_max_tokens(engine: Engine) -> None:
    final = engine.run_chat(ASK, greedy(6, ignore_eos=True), constraints=Constraints(grammar='root ::= [a-z ]*'))
    assert re.fullmatch(r"[a-z ]*", final.text) and final.metrics.predicted_n == 6
    assert final.metrics.stop_reason == "length"


def test_schema_reply_parses_and_validates(engine: Engine) -> None:
    final = engine.run_chat(INVOICE, greedy(160), constraints=schema_constraints(SCHEMA))
    assert final.metrics.stop_reason == "eos", final.text
    assert_follows_schema(final.text)
    # cut short by max_tokens: the text is what it is, reported as not valid (and why)
    short = engine.run_chat(INVOICE, greedy(5), constraints=schema_constraints(SCHEMA))
    assert short.metrics.stop_reason == "length" and short.text.startswith("{")
    assert not check_reply(short.text, SCHEMA).valid


def test_greedy_under_a_grammar_is_llama_cpps_own_choice(smollm2_path: Path) -> None:
    """Our shortcut (the most likely tokens asked one by one, the vocabulary masked only when
    none is allowed) against llama.cpp's own chain with the grammar sampler in it, token by
    token on the same logits."""
    model = LoadedModel(smollm2_path, RuntimeSettings(n_ctx=512, n_threads=1))
    batch = Batch(512)
    grammar = schema_grammar(SCHEMA)
    ours = SamplerChain(greedy(80), model.n_vocab, Constraints(grammar=grammar),
                        grammar=compile_grammar(model.vocab, grammar).take())
    ref = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    llama_cpp.llama_sampler_chain_add(ref, compile_grammar(model.vocab, grammar).take())
    llama_cpp.llama_sampler_chain_add(ref, llama_cpp.llama_sampler_init_greedy())
    try:
        tokens = model.tokenize("Invoice 4711 from ACME, urgent: 3 boxes of paper (sku P-10). As JSON:\n")
        for pos, tok in enumerate(tokens):
            batch.add(tok, pos, 0, pos == len(tokens) - 1)
        reply: list[int] = []
        for pos in range(len(tokens), len(tokens) + 80):
            model.decode(batch)
            mine = ours.sample(model.ctx, batch.n_tokens - 1)
            assert mine == llama_cpp.llama_sampler_sample(ref, model.ctx, batch.n_tokens - 1), model.detokenize(reply)
            if model.is_eog(mine):
                break
            reply.append(mine)
            batch.clear()
            batch.add(mine, pos, 0, True)
        assert model.detokenize(reply).startswith('{ "vendor": "')  # 80 equal tokens into the reply
    finally:
        ours.close()
        llama_cpp.llama_sampler_free(ref)
        batch.close()
        model.close()


def test_bad_grammar_is_refused_at_submit_and_nothing_is_queued(engine: Engine) -> None:
    prompt = engine.chat_prompt(ASK)
    with pytest.raises(GrammarError, match=r"not valid GBNF: .+") as err:
        engine.core.submit(prompt, greedy(4), lambda e: None, constraints=Constraints(grammar='root ::= "a" ('))
    assert "\n" not in str(err.value)
    with pytest.raises(GrammarError, match="root"):
        engine.core.submit(prompt, greedy(4), lambda e: None, constraints=Constraints(grammar='answer ::= "a"'))
    # 30000 nested groups overflowed llama.cpp's recursive parser (a segfault): refused first
    deep = "root ::= " + "(" * 30000 + '"a"' + ")" * 30000
    with pytest.raises(GrammarError, match="nests groups 30000 deep"):
        engine.core.submit(prompt, greedy(4), lambda e: None, constraints=Constraints(grammar=deep))
    in_text = 'root ::= "' + "(" * 300 + '" [(]* # ' + "(" * 300 + "\n"  # brackets in text are not groups
    engine.core.cancel(engine.core.submit(prompt, greedy(4), lambda e: None, constraints=Constraints(grammar=in_text)))
    sneaky = 'root ::= "a" # a comment ends at a carriage return\r' + "(" * 300 + '"b"' + ")" * 300
    with pytest.raises(GrammarError, match="nests groups 300 deep"):
        engine.core.submit(prompt, greedy(4), lambda e: None, constraints=Constraints(grammar=sneaky))
    # 100,000 rules each naming the next overflowed the stack as llama.cpp checked them (a segfault
    # from one request; 40,000 held the server 10 s); "::=" inside a literal is no rule
    def chain(n: int) -> str:
        return "root ::= r0\n" + "".join(f"r{i} ::= r{i + 1}\n" for i in range(n)) + f'r{n} ::= "x"\n'

    from workstation.core.grammar import check_written_grammar

    with pytest.raises(GrammarError, match="has 5,002 rules; at most 4,096"):
        check_written_grammar(chain(5000))  # (a request's grammar: serve refuses it with a 400, param grammar)
    with pytest.raises(GrammarError, match="is 1,777,813 characters long; at most 1,000,000"):
        check_written_grammar(chain(100_000))
    check_written_grammar('root ::= "' + "::=" * 5000 + '"')
    # a grammar made here of tools is held by their bounds, not these: 128 tools make thousands of rules
    engine.core.cancel(engine.core.submit(prompt, greedy(4), lambda e: None, constraints=Constraints(grammar=chain(5000))))
    assert engine.core.requests_deferred == 0


def test_a_schema_asking_for_a_run_no_reply_holds_is_refused_in_a_moment() -> None:
    """A 60-byte schema ("minLength": 10^9) grew the server past 17 GB: the converter spells a
    run out character by character. A lower bound or a pattern's repetition past 10,000 is
    refused; an upper bound past it is no bound here (no reply is that long)."""
    from workstation.core.structured_output import MAX_REPEAT, SchemaError, schema_grammar

    for schema, said in (({"type": "string", "minLength": 10**9}, "minLength 1000000000"),
                         ({"type": "array", "items": {"type": "integer"}, "minItems": 50_000}, "minItems 50000"),
                         ({"type": "object", "properties": {"pin": {"type": "string", "pattern": "^a{1000000}$"}}},
                          "pattern at properties.pin repeats {1000000}"),
                         # each within the bound, together past what any reply holds (a 200 MB grammar)
                         ({"type": "object", "properties": {f"p{i}": {"type": "string", "minLength": 9000}
                                                            for i in range(12)}}, "come to more than 100,000 in all")):
        with pytest.raises(SchemaError, match=re.escape(said)):
            schema_grammar(schema)
    loose = schema_grammar({"type": "string", "maxLength": 10**9})
    assert loose == schema_grammar({"type": "string"}) and len(loose) < 2000
    assert schema_grammar({"type": "string", "minLength": MAX_REPEAT // 10})  # (a long one within the bound)
    # a value is no schema (a default of {"minLength": 20000} was refused); a pattern's upper bound
    # past the bound is no bound, as maxLength's
    assert schema_grammar({"type": "object", "default": {"minLength": 20000}})
    assert schema_grammar({"type": "string", "pattern": "^a{1,20000}$"}) == \
        schema_grammar({"type": "string", "pattern": "^a{1,}$"})


def test_a_grammar_is_freed_when_its_request_never_starts(engine: Engine) -> None:
    prompt = engine.chat_prompt(ASK)
    req = engine.core.submit(prompt, greedy(4), lambda e: None, constraints=Constraints(grammar=YES_NO))
    assert req.grammar is not None and req.grammar.live
    engine.core.cancel(req)  # still waiting: it leaves the queue, its grammar is freed
    assert not req.grammar.live and engine.core.requests_deferred == 0


def test_grammar_on_a_lookup_profile_matches(smollm2_path: Path) -> None:
    """Lookup drafts are verified by a numpy sampler that knows no grammar: a constrained turn
    must not draft, greedy or not."""
    text = "alpha beta gamma delta alpha beta gamma delta alpha beta gamma delta"
    ask = [{"role": "user", "content": f"Repeat exactly: {text}"}]
    grammar = 'root ::= "[" [a-z]+ (" " [a-z]+)* "]"'
    with Engine(make_profile(speculative={"mode": "lookup", "draft_tokens": 4})) as eng:
        eng.decoder.adaptive = False  # draft every step it can: the constrained turn must not
        free = eng.run_chat(ask, greedy(24))
        assert free.metrics.draft_n > 0  # the profile does draft on this prompt
        for sampling in (greedy(24), Sampling(temperature=0.9, top_k=40, min_p=0.0, max_tokens=24, seed=3)):
            final = eng.run_chat(ask, sampling, constraints=Constraints(grammar=grammar))
            assert re.fullmatch(r"\[[a-z]+( [a-z]+)*\]?", final.text), final.text
            assert final.metrics.draft_n == 0


# --- schemas, requests ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ([1, 2], "must be an object, not an array"),
        ({"type": "strin"}, "not valid at type"),
        ({"$ref": "#/$defs/missing"}, "'/$defs/missing' points to nothing"),
        ({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}, "remote schema"),
        ({"$schema": [1], "type": "object"}, "$schema must be a string"),  # was a TypeError: a 500
    ],
)
def test_a_bad_schema_is_one_sentence_naming_what_is_wrong(schema: Any, said: str) -> None:
    with pytest.raises(SchemaError) as err:
        schema_constraints(schema)
    assert said in str(err.value) and "\n" not in str(err.value)


def test_request_fields_parse_into_one_grammar() -> None:
    fmt = parse_output_format({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA, "strict": True}}})
    assert fmt.kind == "json_schema" and fmt.schema == SCHEMA and "root ::=" in fmt.grammar
    assert parse_output_format({"response_format": {"type": "text"}}).grammar == ""
    assert parse_output_format({"response_format": {"type": "json_object"}}).kind == "json_object"
    assert parse_output_format({"grammar": YES_NO}).param == "grammar"
    for body, param in (
        ({"response_format": {"type": "yaml"}}, "response_format"),
        ({"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA, "strict": "yes"}}}, "response_format"),
        ({"json_schema": {"type": "strin"}}, "json_schema"),
        ({"grammar": 5}, "grammar"),
        ({"grammar": YES_NO, "json_schema": SCHEMA}, "grammar"),
        ({"grammar": YES_NO, "response_format": {"type": "json_object"}}, "grammar"),
    ):
        with pytest.raises(ApiError) as err:
            parse_output_format(body)
        assert err.value.status == 400 and err.value.param == param, body


_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=8))
_KEYS = st.sampled_from(["type", "properties", "items", "required", "enum", "const", "$ref", "pattern", "maxLength",
                         "minItems", "additionalProperties", "anyOf", "allOf", "$defs", "format", "minimum"])
_SCHEMA = st.recursive(
    st.one_of(_LEAF, st.sampled_from(["object", "array", "string", "integer", "strin", "#/$defs/a", "#/x", "^a+$", "a("])),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS | st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
_BODY = st.fixed_dictionaries({}, optional={
    "response_format": _SCHEMA | st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "json_object", "json_schema", "x"])},
        optional={"json_schema": _SCHEMA | st.fixed_dictionaries({}, optional={"name": _LEAF, "schema": _SCHEMA}),
                  "schema": _SCHEMA},
    ),
    "json_schema": _SCHEMA,
    "grammar": _LEAF,
})


@given(body=_BODY)
@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_fuzzed_fields_are_a_grammar_or_one_400(engine: Engine, body: dict[str, Any]) -> None:
    """Odd schemas and fields never raise anything but a 400 with one sentence, and a schema
    that is accepted becomes a grammar llama.cpp compiles."""
    try:
        fmt = parse_output_format(body)
    except ApiError as err:
        assert err.status == 400 and err.param in body and "\n" not in err.message
        return
    if fmt.grammar and fmt.kind != "grammar":
        compile_grammar(engine.model.vocab, fmt.grammar).close()


# --- the server ---------------------------------------------------------------------------------
server = served_module("structured")


def test_openai_client_json_schema_round_trip(server: RunningServer) -> None:
    client = openai_client(server)
    fmt: Any = {"type": "json_schema", "json_schema": {"name": "invoice", "schema": SCHEMA, "strict": True}}
    done = client.chat.completions.create(
        model="x", messages=INVOICE, max_tokens=160, temperature=0, response_format=fmt  # type: ignore[arg-type]
    )
    text = done.choices[0].message.content or ""
    assert done.choices[0].finish_reason == "stop"
    assert_follows_schema(text)
    stream = client.chat.completions.create(
        model="x", messages=INVOICE, max_tokens=160, temperature=0, response_format=fmt, stream=True  # type: ignore[arg-type]
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == text
    person = [{"role": "user", "content": 'Reply with a JSON object with keys "name" and "age" for Ann, 31.'}]
    obj = client.chat.completions.create(
        model="x", messages=person, max_tokens=40, temperature=0, response_format={"type": "json_object"}
    )
    assert obj.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(obj.choices[0].message.content or ""), dict)


def test_a_grammar_with_logprobs_and_a_logit_bias(server: RunningServer) -> None:
    """The reply format's grammar, the probabilities and the bias asked for in one request all
    reach the sampler: the reply keeps to the grammar, each of its tokens has a logprob, and a
    banned answer is never given."""
    body: dict[str, Any] = {"prompt": "Is water wet? Answer:", "max_tokens": 8, "temperature": 0,
                            "grammar": YES_NO, "logprobs": 2}
    free = httpx.post(f"{server.base_url}/completions", json=body, timeout=120).json()["choices"][0]
    assert free["text"] in ("yes", "no")
    assert len(free["logprobs"]["tokens"]) == len(free["logprobs"]["token_logprobs"]) >= 1
    first = httpx.post(f"{server.root}/tokenize", json={"content": free["text"]}, timeout=30).json()["tokens"][0]
    banned = httpx.post(f"{server.base_url}/completions", json={**body, "logit_bias": {str(first): -100}},
                        timeout=120).json()["choices"][0]
    assert banned["text"] in ("yes", "no") and banned["text"] != free["text"]


# a grammar whose one way forward the logit bias bans: nothing is left to generate
STUCK = {"prompt": "Say a letter:", "max_tokens": 4, "temperature": 0, "grammar": 'root ::= "q"',
         "logit_bias": [["q", False]]}


def test_a_grammar_its_logit_bias_makes_impossible_is_a_400_in_one_sentence(server: RunningServer) -> None:
    """The request's own settings leave no token: the client is told so as a bad request (not a
    server error), whole or streamed, on OpenAI's and llama-server's routes; the server goes on.
    A stream fails at its first token here, so its 400 comes before the stream starts (as
    OpenAI's and llama-server's: it was a 200 and an error event)."""
    r = httpx.post(f"{server.base_url}/completions", json=STUCK, timeout=120)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and "allow no token" in error["message"]
    assert "\n" not in error["message"] and error["param"] == "grammar"  # (it was null)
    for url, body in ((f"{server.base_url}/completions", STUCK), (f"{server.root}/completion",
                      {**STUCK, "n_predict": 4})):
        streamed = httpx.post(url, json={**body, "stream": True}, timeout=120)
        assert streamed.status_code == 400, (url, streamed.text)
        assert streamed.json()["error"]["type"] == "invalid_request_error"
        assert "allow no token" in streamed.json()["error"]["message"]
        assert streamed.json()["error"]["param"] == "grammar"
    ok = httpx.post(f"{server.base_url}/completions", json={**STUCK, "logit_bias": {}}, timeout=120)
    assert ok.status_code == 200 and ok.json()["choices"][0]["text"] == "q"


def test_an_impossible_grammar_is_one_sentence_from_the_engine(engine: Engine) -> None:
    """The local engine (chat, the TUI, batch) gets the same sentence as an EngineError."""
    q = engine.model.tokenize("q", False, False)
    assert len(q) == 1
    with pytest.raises(EngineError, match="allow no token"):
        engine.run_chat(ASK, greedy(4), constraints=Constraints(grammar='root ::= "q"',
                                                                logit_bias={q[0]: float("-inf")}))
    assert engine.run_chat(ASK, greedy(4), constraints=Constraints(grammar='root ::= "q"')).text == "q"


def test_llama_server_fields_on_completions(server: RunningServer) -> None:
    r = httpx.post(f"{server.base_url}/completions", json={
        "prompt": "Is water wet? Answer:", "max_tokens": 8, "temperature": 0, "grammar": YES_NO,
    }, timeout=120)
    assert r.status_code == 200 and r.json()["choices"][0]["text"] in ("yes", "no")
    r = httpx.post(f"{server.base_url}/chat/completions", json={
        "messages": ASK, "max_tokens": 40, "temperature": 0, "json_schema": ANSWER,
    }, timeout=120)
    assert r.status_code == 200
    assert check_reply(r.json()["choices"][0]["message"]["content"], ANSWER).valid


@pytest.mark.parametrize(
    ("fields", "param", "said"),
    [
        ({"grammar": 'root ::= "a" ('}, "grammar", "not valid GBNF"),
        ({"grammar": 'answer ::= "a"'}, "grammar", "root"),
        ({"json_schema": {"type": "strin"}}, "json_schema", "not valid"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/nope"}}}},
         "response_format", "$ref"),
        ({"grammar": YES_NO, "json_schema": SCHEMA}, "grammar", "only one"),
        # strict, as OpenAI's strict mode: what a grammar cannot bind is refused by name
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": {
            "type": "object", "properties": {"n": {"type": "object", "minProperties": 1}}}}}},
         "response_format", "minProperties at properties.n"),
        ({"tools": [{"type": "function", "function": {"name": "book", "strict": True, "parameters": {
            "type": "object", "properties": {"who": {"type": "object", "patternProperties": {"^a": {}}}}}}}]},
         "tools", "patternProperties at properties.who"),
    ],
)
def test_invalid_constraints_get_400_naming_the_field(
    server: RunningServer, fields: dict[str, Any], param: str, said: str
) -> None:
    r = httpx.post(f"{server.base_url}/chat/completions", json={"messages": ASK, "max_tokens": 4, **fields}, timeout=60)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and said in error["message"] and error["type"] == "invalid_request_error"


def test_remote_engine_sends_the_schema(server: RunningServer) -> None:
    profile = profile_from_dict(
        {"name": "remote", "backend": "openai", "remote": {"base_url": server.base_url, "timeout_s": 120}},
        "<remote>",
    )
    with RemoteEngine(profile) as remote:
        final = remote.run_chat(ASK, greedy(40), constraints=schema_constraints(ANSWER))
    assert check_reply(final.text, ANSWER).valid, final.text


# --- chat --json-schema, eval --------------------------------------------------------------------
def test_chat_json_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str], smollm2_path: Path) -> None:

    prof = write_profile_file(tmp_path / "p.yaml", context=1024, threads=1, sampling={"max_tokens": 160})
    schema = tmp_path / "invoice.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    assert main(["chat", "-p", str(prof), "--json", "--json-schema", str(schema), INVOICE[0]["content"]]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is True and out["schema_error"] is None
    assert_follows_schema(out["text"])
    assert main(["chat", "-p", str(prof), "--json-schema", str(schema), INVOICE[0]["content"]]) == 0
    captured = capsys.readouterr()
    assert_follows_schema(captured.out)
    assert captured.err.rstrip().endswith("The reply follows invoice.json."), captured.err  # (it said nothing)
    # cut short: printed, then one sentence and exit 1
    assert main(["chat", "-p", str(prof), "--max-tokens", "4", "--json-schema", str(schema), "hi"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("{") and "cut short" in captured.err and "Traceback" not in captured.err
    # a missing or invalid schema file: one sentence, before any model loads
    assert main(["chat", "-p", str(prof), "--json-schema", str(tmp_path / "nope.json"), "hi"]) == 1
    assert "nope.json does not exist" in capsys.readouterr().err
    schema.write_text('{"type": "strin"}', encoding="utf-8")
    assert main(["chat", "-p", str(prof), "--json-schema", str(schema), "hi"]) == 1
    err = capsys.readouterr().err
    assert "invoice.json" in err and "not valid" in err and err.count("\n") == 1


def test_eval_task_with_a_schema(engine: Engine) -> None:
    tasks = task_set_from_data({"tasks": [
        {"id": "sky", "prompt": ASK[0]["content"], "max_tokens": 40, "json_schema": ANSWER},
        {"id": "cut", "prompt": ASK[0]["content"], "max_tokens": 3, "json_schema": ANSWER},
        {"id": "and-match", "prompt": ASK[0]["content"], "max_tokens": 40, "json_schema": ANSWER,
         "match": "contains", "answer": "maybe"},
    ]}, "<tasks>")
    results = run_tasks(engine, tasks).results
    assert results[0].correct and results[0].schema_error is None
    assert check_reply(results[0].reply, ANSWER).valid
    assert not results[1].correct and results[1].schema_error
    assert results[2].reply == results[0].reply and not results[2].correct  # valid, but not "maybe"
    with pytest.raises(TaskSetError, match=r"task 1.*'json_schema'.*not valid"):
        task_set_from_data({"tasks": [{"prompt": "x", "json_schema": {"type": "strin"}}]}, "<tasks>")


def _gbnf_regex(expr: str) -> re.Pattern[str]:
    """A regular expression for GBNF of literals, classes, groups, repeats and alternatives."""
    out, i = [], 0
    while i < len(expr):
        ch = expr[i]
        if ch == '"':
            j = expr.index('"', i + 1)
            out.append(re.escape(expr[i + 1:j]))
            i = j + 1
        elif ch == "[":
            j = expr.index("]", i)
            out.append(expr[i:j + 1])
            i = j + 1
        else:
            out.append("(?:" if ch == "(" else "" if ch == " " else ch)
            i += 1
    return re.compile("".join(out))


@pytest.mark.parametrize(("schema", "low", "high"), [
    ({"minimum": 1, "maximum": 8}, 1, 8),
    ({"minimum": 100, "maximum": 105}, 100, 105),
    ({"minimum": -20, "maximum": -3}, -20, -3),
    ({"minimum": -5, "maximum": 12}, -5, 12),
    ({"minimum": 23, "maximum": 456}, 23, 456),
    ({"minimum": 7}, 7, None),
    ({"minimum": -15}, -15, None),
    ({"maximum": 7}, None, 7),
    ({"maximum": -4}, None, -4),
    ({"exclusiveMinimum": 0, "exclusiveMaximum": 10}, 1, 9),
    ({"minimum": 1.5, "maximum": 4.5}, 2, 4),
    ({"minimum": 0, "exclusiveMinimum": 3, "maximum": 99}, 4, 99),  # the tighter of the two
    # one bound of two digits or more: llama.cpp's single-bound branch let 100 take 10 to 19
    ({"minimum": 100}, 100, None),
    ({"minimum": 105}, 105, None),
    ({"minimum": 10}, 10, None),
    ({"maximum": -100}, None, -100),
    ({"minimum": -1e300, "maximum": 40}, None, 40),  # past 16 digits: no bound
])
def test_an_integers_range_is_bound_by_the_grammar(schema: dict[str, Any], low: int | None, high: int | None) -> None:
    """llama-cpp-python's converter left an integer's range out (a tool's "people: 1 to 8" came
    back as 250); llama.cpp's own converter binds it. Every integer from -1200 to 1200 is
    matched by the grammar exactly when it is in the range."""
    grammar = schema_grammar({"type": "integer", **schema})
    root = re.search(r"^root ::= \((.*)\) space$", grammar, re.M)
    assert root, grammar
    pattern = _gbnf_regex(root.group(1))
    for n in range(-1200, 1201):
        inside = (low is None or n >= low) and (high is None or n <= high)
        assert bool(pattern.fullmatch(str(n))) == inside, (n, root.group(1))
    assert not pattern.fullmatch("007")


def test_a_range_with_no_integer_is_one_sentence() -> None:
    with pytest.raises(SchemaError) as empty:
        schema_grammar({"type": "integer", "exclusiveMinimum": 4, "exclusiveMaximum": 5})
    assert str(empty.value) == ("The JSON schema has an integer whose minimum and maximum leave no whole number "
                                "between them.")


def test_huge_bounds_make_a_small_grammar() -> None:
    """50 integers bounded by -1e300 and 1e300 made a 110 MB grammar in 8 s of the server's event
    loop (a rule of 300 digits a place); past 16 digits a bound is no bound."""
    wide = {"type": "object", "properties": {f"n{i}": {"type": "integer", "minimum": -1e300, "maximum": 1e300}
                                             for i in range(50)}}
    assert len(schema_grammar(wide)) < 10_000  # no bound at all: integers
    half = {"type": "object", "properties": {f"n{i}": {"type": "integer", "minimum": i, "maximum": 1e300}
                                             for i in range(50)}}
    assert len(schema_grammar(half)) < 200_000
    assert "{20,15}" not in schema_grammar({"type": "integer", "minimum": 1e20})  # (a malformed repeat)


def test_sampled_integers_stay_in_their_range(engine: Engine) -> None:
    """At a temperature, the reply to an integer schema is in its range, seed after seed (it
    was 5625498175000380 for 100 to 105)."""
    schema = {"type": "object", "properties": {"people": {"type": "integer", "minimum": 100, "maximum": 105}},
              "required": ["people"]}
    ask = [{"role": "user", "content": "How many people came to the office party? Give it as JSON."}]
    for seed in range(1, 5):
        final = engine.run_chat(ask, Sampling(temperature=1.0, max_tokens=24, seed=seed),
                                constraints=schema_constraints(schema))
        check = check_reply(final.text, schema)
        assert check.valid, (seed, final.text, check.error)


def test_what_a_grammar_cannot_bind_is_named_where_it_is(server: RunningServer) -> None:
    """A strict schema (OpenAI's strict mode: the reply must follow it) with a keyword that
    neither the grammar binds nor OpenAI's strict mode takes is refused, naming it and where; a
    Pydantic model's float range and multipleOf, which the openai client's .parse() sends as
    strict, are taken and left to the reply."""
    schema = {
        "type": "object",
        "minProperties": 1,
        "properties": {
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
            "price": {"type": "number", "minimum": 0, "multipleOf": 0.01},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "kind": {"anyOf": [{"type": "integer"}, {"type": "object", "maxProperties": 2}]},
        },
        "$defs": {"x": {"type": "object", "patternProperties": {"^a": {}}}},
    }
    assert unbound_keywords(schema) == ["minProperties", "maxProperties at properties.kind.anyOf[1]",
                                        "patternProperties at $defs.x"]
    pydantic_like = {"type": "object", "properties": {"share": {"type": "number", "minimum": 0, "maximum": 1},
                                                      "cents": {"type": "number", "multipleOf": 0.01}},
                     "required": ["share", "cents"], "additionalProperties": False}
    assert unbound_keywords(pydantic_like) == []
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": pydantic_like}}
    r = httpx.post(f"{server.base_url}/chat/completions", timeout=60,
                   json={"messages": ASK, "max_tokens": 4, "response_format": fmt})
    assert r.status_code == 200, r.text
