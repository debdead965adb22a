"""Chat templates from GGUF files run in a strict sandbox: escapes, runaway loops and huge
outputs end in a clear error and the visible fallback template."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import GEMMA3

from workstation.core import chat_template
from workstation.core.chat_template import FALLBACK_TEMPLATE, ChatTemplate, TemplateError
from workstation.core.gguf_check import preflight

HOSTILE = Path(__file__).parent / "hostile"
sys.path.insert(0, str(HOSTILE))
import make_corpus  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi."},
    {"role": "user", "content": "Sum 2+2"},
]

# Shapes of real templates (Llama 3, Qwen 2.5, Gemma 3): loops, namespace, trim, tojson, raise_exception.
LLAMA3 = (
    "{{- bos_token }}{%- set date_string = strftime_now('%d %b %Y') %}"
    "{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
    " + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)
QWEN = (
    "{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}"
    "{%- for message in messages %}{{- '<|im_start|>' ~ message.role ~ '\\n' ~ message.content ~ '<|im_end|>\\n' }}"
    "{%- if loop.last and message.role == 'user' %}{% set ns.last_query_index = loop.index0 %}{% endif %}"
    "{%- endfor %}{{- {'n': ns.last_query_index}|tojson }}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@pytest.mark.parametrize("source", [LLAMA3, QWEN, GEMMA3, make_corpus.GOOD_TEMPLATE], ids=["llama3", "qwen", "gemma3", "chatml"])
def test_real_template_shapes_render(source: str) -> None:
    chat = ChatTemplate.for_model(source, "<s>", "</s>")
    assert chat.fallback_reason is None
    text = chat.render(MESSAGES)
    assert "Sum 2+2" in text and "Be brief." in text


def test_smollm2_template_renders(smollm2_path: Path) -> None:
    source = preflight(smollm2_path).metadata["tokenizer.chat_template"]
    chat = ChatTemplate.for_model(source, "", "<|im_end|>")
    assert chat.fallback_reason is None
    assert chat.render(MESSAGES).endswith("<|im_start|>assistant\n")


ESCAPES = {
    "str-class-mro": "{{ ''.__class__.__mro__ }}",
    "subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "cycler-globals": "{{ cycler.__init__.__globals__ }}",
    "joiner-os": "{{ joiner.__init__.__globals__['os'] }}",
    "template-reference-context": "{{ self._TemplateReference__context }}",
    "messages-class": "{{ messages.__class__.__base__ }}",
    "helper-globals": "{{ raise_exception.__globals__ }}",
    "getitem-dunder": "{{ messages['__class__'] }}",
    "format-attribute": "{{ '{0.__class__}'.format(messages) }}",
    "mutating-list": "{% set x = [] %}{{ x.append(1) }}",
}


@pytest.mark.parametrize("source", ESCAPES.values(), ids=ESCAPES.keys())
def test_escape_attempt_gets_clear_error_and_fallback(source: str) -> None:
    with pytest.raises(TemplateError, match="not allowed|unsafe|not safely callable"):
        ChatTemplate(source).render(MESSAGES)
    chat = ChatTemplate.for_model(source, "", "")
    assert chat.source == FALLBACK_TEMPLATE
    assert chat.fallback_reason is not None and chat.fallback_reason.startswith("its template failed")
    assert "\n" not in chat.fallback_reason
    assert chat.render(MESSAGES).count("<|im_start|>") == 5


BIG = "{% set big = 'x' * 4000000 %}"
RUNAWAYS = {
    "range-1e9": "{% for i in range(10**9) %}x{% endfor %}",
    "string-times-huge": "{{ 'x' * 10**9 }}",
    "power-tower": "{{ 2 ** (10 ** 10) }}",
    "center-huge": "{{ 'x'|center(10**9) }}",
    "ljust-huge": "{{ 'x'.ljust(999999999) }}",
    "printf-width": "{{ '%0999999999d'|format(1) }}",
    "percent-star": "{{ '%*d' % (999999999, 1) }}",
    "format-width": "{{ '{:>999999999}'.format(1) }}",
    "format-nested-width": "{{ '{:>{w}}'.format(1, w=999999999) }}",
    "concat-doubling": "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
    "plus-doubling": "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
    "replace-blowup": BIG + "{{ big|replace('x', big) }}",
    "join-blowup": BIG + "{{ range(100000)|join(big) }}",
    "list-repr-blowup": BIG + "{{ [big] * 100000 }}",
    "tojson-blowup": BIG + "{{ ([big] * 100000)|tojson }}",
    "indent-blowup": BIG + "{{ ('\\n' * 1000)|indent(big) }}",
    "huge-output": "{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxxxx{% endfor %}{% endfor %}",
    "recursion": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "lipsum": "{{ lipsum(10**6) }}",
}


@pytest.mark.parametrize("source", RUNAWAYS.values(), ids=RUNAWAYS.keys())
def test_runaway_template_is_stopped(source: str) -> None:
    chat = ChatTemplate.for_model(source, "", "")
    assert chat.fallback_reason is not None, source
    assert chat.source == FALLBACK_TEMPLATE


def test_silent_loop_is_stopped_by_the_render_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat_template, "RENDER_TIMEOUT_S", 0.3)
    source = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(TemplateError, match="ran longer than 0.3 seconds"):
        ChatTemplate(source).render(MESSAGES)
    # the interrupt does not leak: the same thread renders normally afterwards
    assert ChatTemplate(LLAMA3).render(MESSAGES)


def test_template_escape_gguf_falls_back_visibly() -> None:
    header = preflight(HOSTILE / "template-escape.gguf")
    chat = ChatTemplate.for_model(header.metadata["tokenizer.chat_template"], "<s>", "</s>")
    assert chat.fallback_reason is not None and "__class__" in chat.fallback_reason
    assert chat.source == FALLBACK_TEMPLATE


def test_missing_template_uses_fallback() -> None:
    chat = ChatTemplate.for_model(None, "", "")
    assert chat.fallback_reason == "the model has no chat template"


def test_a_model_without_a_template_stops_at_the_stand_ins_end_and_is_said(
        gemma_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Gemma 3 270M (a base model) has no chat template: its reply went on past the stand-in's
    <|im_end|>, writing the markers as text until the length limit, and nothing said why."""
    from conftest import make_profile

    from workstation.core.engine import Engine
    from workstation.core.load_notes import load_notes
    from workstation.core.profiles import Sampling

    profile = make_profile(model=gemma_path, context=1024)
    with Engine(profile) as engine:
        assert engine.info().template_fallback == "the model has no chat template"
        reply = engine.run_chat([{"role": "user", "content": "What is the capital of France?"}],
                                Sampling(temperature=0.0, max_tokens=128))
    assert "<|im_end|>" not in reply.text and "<|im_start|>" not in reply.text
    assert reply.metrics.stop_reason == "stop" and reply.metrics.predicted_n < 128
    notes = [n[1]["what"][0] for n in load_notes(profile)]
    assert "fit.no_chat_template" in notes  # said when it loads (the app, chat), by fit and profiles check


def test_a_chat_reply_without_its_thinking_apart_also_ends_at_the_stand_ins_markers(gemma_path: Path) -> None:
    """`reasoning_format: "none"` on the server's chat route asks for a chat reply whose thinking
    is not told apart: it went on past the stand-in template's <|im_end|>; a completion's text
    (not a chat reply) is the model's own and gets no such stop."""
    from conftest import make_profile

    from workstation.core.chat_template import FALLBACK_STOPS
    from workstation.core.profiles import Sampling
    from workstation.core.scheduler import Scheduler

    scheduler = Scheduler(make_profile(model=gemma_path, context=512, threads=1), n_parallel=1)
    try:
        sampling = Sampling(temperature=0.0, max_tokens=1)
        asked = [scheduler.submit([2, 100], sampling, lambda _e: None, **kind)  # type: ignore[arg-type]
                 for kind in ({"chat": True}, {"reasoning": True}, {})]
        assert [all(s in r.stop for s in FALLBACK_STOPS) for r in asked] == [True, True, False]
    finally:
        scheduler.close()

