"""llama-server's request options this server does not implement (and OpenAI's few beside them:
an answer in sound, vLLM's ``min_tokens``): refused by name, never dropped.

Clients written for llama-server (its web UI, its bindings) send many sampler options with
their default values. A value that leaves an option off (``mirostat: 0``, ``typical_p: 1``,
``dry_multiplier: 0``) changes nothing here and is accepted; any other value gets a 400 that
names the option and the value it may have. An option that only tunes another one
(``mirostat_tau``, ``dry_base``, ``xtc_threshold``, ``dynatemp_exponent``) is accepted whatever
its value: it does nothing while that option is off, as in llama-server. One list, checked on
``/completion`` and on the OpenAI routes alike (``refuse_unsupported``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workstation.core.server.protocol import ApiError, bad


def _equal(*values: Any) -> Callable[[Any], bool]:
    def off(value: Any) -> bool:
        return any(value == v and isinstance(value, bool) == isinstance(v, bool) for v in values)

    return off


def _not_positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value <= 0


def _empty(value: Any) -> bool:
    return value in ([], {}, "", False)


# option -> (is the value one that leaves it off?, how to say which values are accepted)
OFF: dict[str, tuple[Callable[[Any], bool], str]] = {
    "mirostat": (_equal(0), "0"),
    "typical_p": (_equal(1), "1"),
    "dynatemp_range": (_equal(0), "0"),
    "dry_multiplier": (_equal(0), "0"),
    "xtc_probability": (_equal(0), "0"),
    "top_n_sigma": (_not_positive, "-1"),
    "adaptive_target": (lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v < 0, "-1"),
    "repeat_last_n": (_equal(64), "64 (the window this server's repeat penalty uses)"),
    "min_keep": (_equal(0), "0"),
    "n_indent": (_equal(0), "0"),
    "n_keep": (_equal(0, -1), "0 or -1 (this server never shifts the context)"),
    "n_discard": (_equal(0), "0"),
    "n_cmpl": (_equal(1), "1"),
    "best_of": (_equal(1), "1"),
    "n_cache_reuse": (_equal(0), "0"),
    "t_max_prompt_ms": (_not_positive, "0"),
    "t_max_predict_ms": (_not_positive, "0"),
    "timings_per_token": (_equal(False), "false"),
    "post_sampling_probs": (_equal(False), "false"),
    "verbose": (_equal(False), "false"),
    "backend_sampling": (_equal(False), "false"),
    "echo": (_equal(False), "false"),
    "suffix": (_empty, "an empty string"),
    "sse_ping_interval": (_equal(-1), "-1"),
    "response_fields": (_empty, "an empty list"),
    "lora": (_empty, "an empty list"),
    "grammar_lazy": (_equal(False), "false"),
    "grammar_triggers": (_empty, "an empty list"),
    "preserved_tokens": (_empty, "an empty list"),
    # OpenAI's and vLLM's: a reply in sound, a reply at least so long
    "modalities": (lambda v: v == ["text"], '["text"] (this server answers in text only)'),
    "audio": (_empty, "nothing (this server answers in text only)"),
    "min_tokens": (_equal(0), "0"),
}
NEVER = (  # per-request speculative settings: a profile's ``speculative`` decides them here
    "speculative.n_max",
    "speculative.n_min",
    "speculative.p_min",
    "speculative.type",
    "speculative.ngram_size_n",
    "speculative.ngram_size_m",
    "speculative.ngram_min_hits",
)

# llama-server's sampler names and letters; ``samplers`` is accepted when it names this server's
# order (top_k, top_p, min_p, temperature; the repeat penalty first), leaving out or listing
# samplers whose own option is off (see OFF)
SAMPLER_LETTERS = {
    "d": "dry", "k": "top_k", "y": "typ_p", "p": "top_p", "s": "top_n_sigma", "m": "min_p",
    "t": "temperature", "x": "xtc", "i": "infill", "e": "penalties", "a": "adaptive_p",
}
SAMPLER_ALIASES = {"typical_p": "typ_p", "typical": "typ_p", "nucleus": "top_p", "temp": "temperature",
                   "top_n": "top_n_sigma", "penalty": "penalties", "repetition": "penalties"}
OUR_ORDER = ["top_k", "top_p", "min_p", "temperature"]
INERT_SAMPLERS = {"penalties", "dry", "typ_p", "top_n_sigma", "xtc", "adaptive_p"}


def _sampler_names(value: Any) -> list[str] | None:
    if isinstance(value, str):
        if any(c not in SAMPLER_LETTERS for c in value):
            return None
        return [SAMPLER_LETTERS[c] for c in value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = [v.strip().lower().replace("-", "_") for v in value]
        return [SAMPLER_ALIASES.get(n, n) for n in names]
    return None


def _samplers_match(value: Any) -> bool:
    names = _sampler_names(value)
    if names is None:
        return False
    return [n for n in names if n not in INERT_SAMPLERS] == OUR_ORDER


def refuse_unsupported(body: dict[str, Any], where: str = "") -> None:
    """ApiError(400) naming the first option in ``body`` that this server does not implement
    with a value that would change the reply (see the module's docstring). ``where``: the
    options' place in the request, before their names (Ollama's ``options.``)."""
    for name, value in body.items():
        if value is None:
            continue
        said = f"'{where}{name}'"
        if name in OFF:
            off, allowed = OFF[name]
            if not off(value):
                raise bad(
                    f"{said} is not supported by this server; leave it out or send {allowed}.", name
                )
        elif name in NEVER:
            raise bad(f"{said} is not supported by this server; the profile's speculative settings apply.", name)
        elif name == "samplers" and not _samplers_match(value):
            raise bad(
                f"{said} is not supported by this server beyond its own order ({', '.join(OUR_ORDER)}); "
                "leave it out.",
                name,
            )


# Every field /v1/chat/completions knows, served, taken without effect or refused by name above. Another
# is refused (OpenAI's 400 "Unknown parameter" naming it) where it is a misspelling of one of them (a misspelt
# max_token let the reply run to the profile's limit, temprature was no temperature) or another server's way
# to constrain the reply (vLLM's guided_json left it unconstrained); any other is taken without effect, as
# llama-server, Ollama and LM Studio take it (a client made for another server keeps working here)
OPENAI_CHAT_FIELDS = frozenset((  # OpenAI's own: what its SDKs may send
    "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "prompt_cache_retention", "reasoning_effort", "response_format",
    "safety_identifier", "seed", "service_tier", "stop", "store", "stream", "stream_options", "temperature",
    "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity",
))
LLAMA_SERVER_FIELDS = frozenset((  # llama-server's, on its OpenAI route too (see README's list)
    "n_predict", "top_k", "min_p", "repeat_penalty", "dynatemp_exponent", "dry_base", "dry_allowed_length",
    "dry_penalty_last_n", "dry_sequence_breakers", "xtc_threshold", "mirostat_tau", "mirostat_eta",
    "adaptive_decay", "grammar", "json_schema", "ignore_eos", "n_probs", "id_slot", "cache_prompt",
    "return_tokens", "samplers", "return_progress", "chat_template_kwargs", "reasoning_format",
    "reasoning_budget", "thinking_forced_open", "parse_tool_calls", "add_generation_prompt",
    "continue_final_message", *OFF, *NEVER,
))
# (ours: the app's own chat's conversation_tag, and stop_on_loop: the loop watch on or off)
CHAT_FIELDS = OPENAI_CHAT_FIELDS | LLAMA_SERVER_FIELDS | {"conversation_tag", "stop_on_loop"}


# other servers' ways to constrain a reply: dropped, the reply came back unconstrained
CONSTRAINTS = frozenset(("guided_json", "guided_regex", "guided_choice", "guided_grammar", "guided_decoding_backend",
                         "guided_whitespace_pattern", "structured_outputs", "format"))
# other servers' own fields, like a known one's name but not its misspelling: taken without effect (OpenRouter's
# 'models' was refused as "Did you mean 'model'?", Ollama's 'num_keep' as 'n_keep')
ELSEWHERE = frozenset(("models", "route", "provider", "transforms", "plugins", "usage", "num_keep", "num_ctx",
                       "num_predict", "keep_alive", "options"))
CLOSE = 0.9  # how alike a field's name must be to a known one to be taken as its misspelling (difflib's ratio)
# unknown fields compared with the known ones, at most: each comparison is difflib's over every known name, on
# the server's event loop (a 4 MB body of made-up names held every client, /health too, for 35 s)
LOOKED_AT = 32


def refuse_unknown(body: dict[str, Any], known: frozenset[str]) -> None:
    """OpenAI's 400 for the first field of ``body`` not in ``known`` that is a misspelling of one
    that is (``Unknown parameter: 'max_token'. Did you mean 'max_tokens'?``) or another server's
    way to constrain the reply (``CONSTRAINTS``): the name as ``param``, ``code``
    "unknown_parameter". Any other unknown field is left to be taken without effect (past the
    first ``LOOKED_AT`` unknown ones, none is taken for a misspelling)."""
    import difflib

    looked = 0
    for name in body:
        if name in known or name in ELSEWHERE:
            continue
        looked += 1  # (past LOOKED_AT, only another server's constraints are looked for: a set's lookup)
        close = difflib.get_close_matches(name, known, n=1, cutoff=CLOSE) if looked <= LOOKED_AT else []
        if close:
            message = f"Unknown parameter: '{name}'. Did you mean '{close[0]}'?"
        elif name in CONSTRAINTS:
            message = (f"Unknown parameter: '{name}'. This server constrains a reply with response_format "
                       "(json_schema or json_object), json_schema or grammar.")
        else:
            continue
        unknown = ApiError(400, message, param=name, code="unknown_parameter")
        unknown.worded = True  # (the name the client sent, in any dialect's errors)
        raise unknown
