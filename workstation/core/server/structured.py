"""The request fields that constrain a reply's shape, parsed into a grammar for the scheduler.

* OpenAI's ``response_format``: ``{"type": "text"}`` (no constraint), ``{"type": "json_object"}``
  (any JSON object; llama-server also reads a ``schema`` in it), ``{"type": "json_schema",
  "json_schema": {"name", "schema", "strict", "description"}}`` (a reply that follows the schema;
  a missing ``schema`` means any JSON object, as llama-server reads it);
* llama-server's top-level ``json_schema`` (a schema) and ``grammar`` (GBNF text).

At most one of them may constrain a request. A schema that is not valid, or that the converter
cannot turn into a grammar, is a 400 naming the field; a grammar that llama.cpp cannot parse is
refused when the request is submitted (``GrammarError``) and answered the same way, with the
field from ``OutputFormat.param``. ``strict: true`` also refuses a schema with keywords that
neither the grammar binds nor OpenAI's strict mode takes (``minProperties``, ``not``, ...:
structured_output.UNBOUND_KEYWORDS); without it they are left to the reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workstation.core.grammar import GrammarError, check_written_grammar
from workstation.core.profiles import Constraints
from workstation.core.server.protocol import ApiError, bad
from workstation.core.structured_output import (
    JSON_OBJECT_GRAMMAR,
    SchemaError,
    refuse_unbound,
    schema_grammar,
)

FORMAT_TYPES = ("text", "json_object", "json_schema")
_JSON_SCHEMA_FIELDS = ("name", "schema", "strict", "description")


@dataclass(frozen=True)
class OutputFormat:
    """What shape the reply must have: ``grammar`` (GBNF, "" for free text), the ``schema`` it
    came from (None for json_object, a raw grammar or text), and the request field that asked
    for it (``param`` of a 400 about it)."""

    kind: str = "text"  # text | json_object | json_schema | grammar
    grammar: str = ""
    schema: dict[str, Any] | None = None
    param: str | None = None

    def constraints(self) -> Constraints:
        return Constraints(grammar=self.grammar, json_schema=self.schema)


def schema_format(schema: Any, param: str, strict: bool = False) -> OutputFormat:
    """A JSON schema as the reply's format (its grammar); a 400 naming ``param`` for a schema the
    grammar cannot make (``strict``: also one with keywords it cannot bind)."""
    try:
        grammar = schema_grammar(schema)
        if strict:
            refuse_unbound(schema)
    except SchemaError as err:
        raise bad(f"'{param}': {err}", param) from None
    return OutputFormat("json_schema", grammar, schema, param)


def _response_format(value: Any) -> OutputFormat:
    param = "response_format"
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise bad("'response_format' must be an object with a 'type' (text, json_object or json_schema).", param)
    kind = value["type"]
    if kind not in FORMAT_TYPES:
        raise bad(f"'response_format.type' is {kind!r}; allowed values are {', '.join(FORMAT_TYPES)}.", param)
    if kind == "text":
        return OutputFormat(param=param)
    if kind == "json_object":
        if value.get("schema") is not None:  # llama-server's extension
            return schema_format(value["schema"], param)
        return OutputFormat("json_object", JSON_OBJECT_GRAMMAR, None, param)
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise bad("'response_format.json_schema' is required: an object with 'name' and 'schema'.", param)
    for key in spec:
        if key not in _JSON_SCHEMA_FIELDS:
            raise bad(
                f"'response_format.json_schema' has an unknown field {key!r}; allowed fields are "
                f"{', '.join(_JSON_SCHEMA_FIELDS)}.",
                param,
            )
    if "name" in spec and not isinstance(spec["name"], str):
        raise bad("'response_format.json_schema.name' must be a string.", param)
    if "strict" in spec and spec["strict"] is not None and not isinstance(spec["strict"], bool):
        raise bad("'response_format.json_schema.strict' must be true or false.", param)
    schema = spec.get("schema")
    return schema_format({} if schema is None else schema, param, strict=spec.get("strict") is True)


def parse_output_format(body: dict[str, Any]) -> OutputFormat:
    """The reply's required shape from ``response_format``, ``json_schema`` and ``grammar``;
    ApiError(400) naming the field when one is wrong or two constrain the same reply."""
    found: list[OutputFormat] = []
    if body.get("response_format") is not None:
        fmt = _response_format(body["response_format"])
        if fmt.grammar:
            found.append(fmt)
    if body.get("json_schema") is not None:
        found.append(schema_format(body["json_schema"], "json_schema"))
    grammar = body.get("grammar")
    if grammar is not None:
        if not isinstance(grammar, str):
            raise bad("'grammar' must be a string of GBNF rules.", "grammar")
        if grammar.strip():
            try:
                check_written_grammar(grammar)
            except GrammarError as err:
                raise bad(str(err), "grammar") from None
            found.append(OutputFormat("grammar", grammar, None, "grammar"))
    if len(found) > 1:
        names = " and ".join(f"'{f.param}'" for f in found)
        raise bad(
            f"{names} {'both' if len(found) == 2 else 'all'} constrain the reply; send only one of them.",
            found[-1].param,
        )
    return found[0] if found else OutputFormat()


def grammar_refused(fmt: OutputFormat | None, message: str) -> ApiError:
    """The 400 for a grammar llama.cpp would not compile (``GrammarError`` at submit)."""
    param = fmt.param if fmt is not None else None
    return bad(f"'{param}': {message}" if param else message, param)
