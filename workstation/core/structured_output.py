"""Structured output: a JSON schema becomes a GBNF grammar, and a reply is checked against it.

The grammar comes from llama-cpp-python's converter (``llama_cpp.llama_grammar``:
``json_schema_to_gbnf``, the port of llama.cpp's ``json_schema_to_grammar``), and "any JSON
object" is its ``JSON_GBNF``. The grammar constrains sampling (``core/grammar.py``), so a
reply that ran to its end parses and follows the schema's structure; ``check_reply`` validates
it with the ``jsonschema`` package, which also knows the keywords a grammar cannot express
(``minimum``, ``multipleOf``, ...). A reply cut short (``max_tokens``, the context) is what it
is: unfinished JSON, reported as not valid.

Used by the server's ``response_format`` and ``json_schema`` fields (``core/server/
structured.py``), ``workstation chat --json-schema FILE`` and eval tasks with a ``json_schema``
(``core/evaluate.py``).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

from workstation.core.atomic import read_text_file
from workstation.core.errors import WorkstationError
from workstation.core.profiles import Constraints

JSON_OBJECT_GRAMMAR = JSON_GBNF  # root ::= object
_SHOWN = 160  # characters of a converter's message shown to the user


class SchemaError(WorkstationError):
    """A JSON schema that cannot constrain a reply; the message names what is wrong."""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def _location(path: Any) -> str:
    """``properties.items.type`` for a jsonschema error path; "" at the top."""
    parts = [f"[{p}]" if isinstance(p, int) else str(p) for p in path]
    return ".".join(parts).replace(".[", "[")


def check_schema(schema: Any) -> dict[str, Any]:
    """``schema`` when it is a JSON schema (an object, valid against its draft's meta-schema);
    else SchemaError naming what is wrong."""
    if not isinstance(schema, dict):
        raise SchemaError(f"The JSON schema must be an object, not {_json_type(schema)}.")
    if not isinstance(schema.get("$schema", ""), str):  # jsonschema looks its dialect up by it
        raise SchemaError("The JSON schema's $schema must be a string (the schema's dialect).")
    import jsonschema  # 50 ms: only when a schema is used, not for every command line

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as err:
        where = _location(err.absolute_path)
        raise SchemaError(
            "The JSON schema is not valid" + (f" at {where}" if where else "") + f": {_clip(err.message)}."
        ) from None
    except RecursionError:
        raise SchemaError("The JSON schema nests more deeply than can be checked.") from None
    return schema


def _clip(text: str) -> str:
    text = " ".join(text.split()).rstrip(".")
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _converter_message(err: Exception) -> str:
    """The converter's assertion, said plainly (its messages print whole sub-schemas)."""
    text = str(err)
    if match := re.match(r"Error resolving ref (\S+?):", text):
        return f"the $ref {match.group(1).split('#', 1)[-1]!r} points to nothing in the schema"
    if match := re.match(r"Unsupported ref (.+)", text):
        return f"the $ref {match.group(1)!r} is not supported (only references within the schema, '#/...')"
    if text.startswith("Fetching remote schemas is not allowed"):
        return "it refers to a remote schema ($ref to a URL), which this server does not fetch"
    if text.startswith("Unrecognized schema"):
        return "it uses a type or construct the grammar converter does not know: " + _clip(text.split(":", 1)[-1])
    if text.startswith('Pattern must start with "^"'):
        return "a 'pattern' must start with ^ and end with $ to be turned into a grammar"
    return _clip(text) or type(err).__name__


def schema_grammar(schema: Any) -> str:
    """The GBNF grammar for replies that follow ``schema`` (checked first); SchemaError when
    the schema is not valid or cannot be converted. The last ``CACHED_SCHEMAS`` conversions are
    kept (a tool sends the same schema with every request; a 50-property schema takes tens of
    milliseconds to check and convert)."""
    if not isinstance(schema, dict):
        check_schema(schema)  # says what it is instead
    try:
        text = json.dumps(schema)
    except (TypeError, ValueError) as err:
        raise SchemaError(f"The JSON schema holds a value JSON cannot write: {_clip(str(err))}.") from None
    except RecursionError:
        raise SchemaError("The JSON schema nests more deeply than can be checked.") from None
    return _grammar_of(text)


CACHED_SCHEMAS = 64


@functools.lru_cache(maxsize=CACHED_SCHEMAS)
def _grammar_of(text: str) -> str:
    """``schema_grammar`` of the schema written as ``text`` (errors are not cached)."""
    check_schema(json.loads(text))
    try:
        return _json_safe_strings(json_schema_to_gbnf(text))
    except RecursionError:
        raise SchemaError("The JSON schema nests or refers to itself too deeply to become a grammar.") from None
    except Exception as err:  # noqa: BLE001 - the converter asserts and raises anything; say it in one sentence
        raise SchemaError(f"The JSON schema cannot be turned into a grammar: {_converter_message(err)}.") from None


# llama-cpp-python's converter lets a string hold any character but '"' and '\\', control
# characters too (a line break inside a string: not JSON); llama.cpp's own converter excludes
# them. A pattern's "." (any character but a line break) gets the same JSON-safe class.
_JSON_CHAR = r'[^"\\\x7F\x00-\x1F]'
_LOOSE_CHAR = (r'char ::= [^"\\] |', f"char ::= {_JSON_CHAR} |")
_LOOSE_DOT = (r"dot ::= [^\x0A\x0D]", f"dot ::= {_JSON_CHAR}")


def _json_safe_strings(grammar: str) -> str:
    for loose, safe in (_LOOSE_CHAR, _LOOSE_DOT):
        grammar = re.sub(f"^{re.escape(loose)}", lambda _m, safe=safe: safe, grammar, count=1, flags=re.M)
    return grammar


def clear_schema_cache() -> None:
    """Forget the kept conversions (bench: the cold cost)."""
    _grammar_of.cache_clear()


def schema_constraints(schema: Any) -> Constraints:
    """The constraints of a reply that must follow ``schema``: its grammar, and the schema."""
    return Constraints(grammar=schema_grammar(schema), json_schema=schema)


def load_schema_file(path: Path) -> Constraints:
    """The constraints of the JSON schema in ``path`` (CLI): SchemaError naming the file when it
    is missing, unreadable, not JSON or not a schema that can become a grammar."""
    text = read_text_file(path, "The JSON schema file", SchemaError)
    try:
        schema = json.loads(text)
    except ValueError as err:
        raise SchemaError(f"The JSON schema file {path} is not valid JSON: {err}.") from None
    try:
        return schema_constraints(schema)
    except SchemaError as err:
        raise SchemaError(f"{path}: {err}") from None


@dataclass(frozen=True)
class ReplyCheck:
    """Whether a reply is JSON that follows the schema; ``error`` says where it is not."""

    valid: bool
    error: str = ""
    value: Any = None


def check_reply(text: str, schema: dict[str, Any] | None) -> ReplyCheck:
    """Parse ``text`` as JSON and validate it against ``schema`` (None: any JSON object)."""
    try:
        value = json.loads(text)
    except ValueError as err:
        reason = f"{err.msg} (line {err.lineno}, column {err.colno})" if isinstance(err, json.JSONDecodeError) else str(err)
        return ReplyCheck(False, f"the reply is not JSON: {reason}")
    if schema is None:
        if not isinstance(value, dict):
            return ReplyCheck(False, f"the reply is {_json_type(value)}, not a JSON object", value)
        return ReplyCheck(True, "", value)
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    if error is not None:
        where = _location(error.absolute_path)
        return ReplyCheck(False, (f"{where}: " if where else "") + _clip(error.message), value)
    return ReplyCheck(True, "", value)
