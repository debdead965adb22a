"""Structured output: a JSON schema becomes a GBNF grammar, and a reply is checked against it.

The grammar comes from llama-cpp-python's converter (``llama_cpp.llama_grammar``:
``json_schema_to_gbnf``, the port of llama.cpp's ``json_schema_to_grammar``), with integer
ranges (``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum`` of an integer) added
as llama.cpp's own converter writes them, and "any JSON object" is its ``JSON_GBNF``. The
grammar constrains sampling (``core/grammar.py``), so a reply that ran to its end parses and
follows the schema's structure; ``check_reply`` validates it with the ``jsonschema`` package,
which also knows the keywords a grammar cannot express (``multipleOf``, a decimal number's
range, ...). A request that asks for the schema to be strict is refused where its schema uses
one that OpenAI's strict mode does not take either (``UNBOUND_KEYWORDS``). A reply cut short
(``max_tokens``, the context) is what it is: unfinished JSON, reported as not valid.

Used by the server's ``response_format`` and ``json_schema`` fields (``core/server/
structured.py``), ``workstation chat --json-schema FILE`` and eval tasks with a ``json_schema``
(``core/evaluate.py``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_cpp.llama_grammar import JSON_GBNF, RESERVED_NAMES, SchemaConverter

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


# assertions a grammar cannot hold a reply to, which OpenAI's strict mode does not take either: a
# "strict" schema with one is refused (in every other schema they are left to the reply, as are
# the ones OpenAI's strict mode takes but a grammar does not bind here: a decimal number's
# range, multipleOf, uniqueItems, formats but date, time, date-time and uuid, a pattern's lengths;
# the openai client's .parse() sends every Pydantic model as strict, a float's ge=0 too)
UNBOUND_KEYWORDS = (
    "minProperties", "maxProperties", "patternProperties", "propertyNames", "unevaluatedProperties",
    "unevaluatedItems", "contains", "minContains", "maxContains", "dependentRequired", "dependentSchemas",
    "dependencies", "not", "if", "then", "else",
)
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")


def unbound_keywords(schema: Any, where: str = "") -> list[str]:
    """Where ``schema`` uses one of UNBOUND_KEYWORDS: "minProperties at properties.address"."""
    if not isinstance(schema, dict):
        return []
    at = f" at {where}" if where else ""
    found = [f"{k}{at}" for k in UNBOUND_KEYWORDS if k in schema]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                found += unbound_keywords(sub, f"{where}.{key}.{name}".lstrip("."))
    for key in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                found += unbound_keywords(sub, f"{where}.{key}[{i}]".lstrip("."))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found += unbound_keywords(schema[key], f"{where}.{key}".lstrip("."))
    return found


def refuse_unbound(schema: Any) -> None:
    """SchemaError for a strict schema with keywords the grammar cannot bind, naming them."""
    found = unbound_keywords(schema)
    if found:
        listed = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise SchemaError(
            f"The JSON schema is strict but uses what a grammar cannot hold the reply to: {listed}; "
            "remove it, or send the schema without strict to have it followed as far as a grammar goes."
        )


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


# the longest run a grammar writes out (the converter spells "minLength: N" as N copies of a
# character: a 60-byte schema asking for 10^9 grew the server past 17 GB, its event loop stuck)
MAX_REPEAT = 10_000
_QUANTIFIER = re.compile(r"\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")


MAX_RUNS = 100_000  # the runs of a whole schema together (4,000 properties of minLength 10,000: 200 MB)
_DATA = frozenset({"default", "examples", "enum", "const"})  # values, not schemas: left as they are


def _bounded(schema: Any, where: str = "", spent: list[int] | None = None) -> Any:
    """``schema`` with its runs held to ``MAX_REPEAT`` each and ``MAX_RUNS`` in all: an upper bound
    past it is dropped (no reply here is that long; a pattern's {n,m} becomes {n,}), a lower
    bound or a pattern's least repetition past it is a SchemaError."""
    spent = [0] if spent is None else spent
    if isinstance(schema, list):
        return [_bounded(x, f"{where}[{i}]", spent) for i, x in enumerate(schema)]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    at = f" at {where}" if where else ""
    for key, value in schema.items():
        if key in _DATA:
            out[key] = value
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if key in ("maxLength", "maxItems") and number and value > MAX_REPEAT:
            continue
        if key in ("minLength", "minItems", "maxLength", "maxItems") and number and value > 0:
            if key.startswith("min") and value > MAX_REPEAT:
                raise SchemaError(f"The JSON schema asks for {key} {value}{at}; a reply here holds far less, so at "
                                  f"most {MAX_REPEAT:,} is accepted.")
            spent[0] += int(value)
        if key == "pattern" and isinstance(value, str):
            for m in _QUANTIFIER.finditer(value):
                if int(m.group(1)) > MAX_REPEAT:
                    raise SchemaError(f"The JSON schema's pattern{at} repeats {m.group(0)}; at most {MAX_REPEAT:,} "
                                      "repetitions are accepted.")
                spent[0] += min(int(m.group(2) or m.group(1)), MAX_REPEAT)
            value = _QUANTIFIER.sub(lambda m: f"{{{m.group(1)},}}" if m.group(2) and int(m.group(2)) > MAX_REPEAT
                                    else m.group(0), value)
        if spent[0] > MAX_RUNS:
            raise SchemaError(f"The JSON schema's lengths and counts come to more than {MAX_RUNS:,} in all{at}; a "
                              "reply here holds far less.")
        out[key] = _bounded(value, f"{where}.{key}".lstrip("."), spent) if isinstance(value, dict | list) else value
    return out


@functools.lru_cache(maxsize=CACHED_SCHEMAS)
def _grammar_of(text: str) -> str:
    """``schema_grammar`` of the schema written as ``text`` (errors are not cached)."""
    check_schema(json.loads(text))
    try:
        converter = _Converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        converter.visit(converter.resolve_refs(_bounded(json.loads(text)), "stdin"), "")
        return _json_safe_strings(converter.format_grammar())
    except RecursionError:
        raise SchemaError("The JSON schema nests or refers to itself too deeply to become a grammar.") from None
    except SchemaError:
        raise  # (said already; wrapped, it read "cannot be turned into a grammar: The JSON schema ...")
    except Exception as err:  # noqa: BLE001 - the converter asserts and raises anything; say it in one sentence
        raise SchemaError(f"The JSON schema cannot be turned into a grammar: {_converter_message(err)}.") from None


class _Converter(SchemaConverter):  # type: ignore[misc]
    """llama-cpp-python's converter (``json_schema_to_gbnf``), with an integer's range bound by
    the grammar as llama.cpp's C++ converter binds it (the Python port leaves it a TODO: a tool's
    "people: 1 to 8" came back as 250)."""

    def visit(self, schema: Any, name: str) -> str:
        bounds = _integer_bounds(schema) if isinstance(schema, dict) else None
        if bounds is None:
            return str(super().visit(schema, name))
        rule_name = name + "-" if name in RESERVED_NAMES else name or "root"
        lo, hi = bounds
        if lo > hi:
            raise SchemaError("The JSON schema has an integer whose minimum and maximum leave no whole number "
                              "between them.")
        out: list[str] = ["("]
        _min_max_int(lo, hi, out)
        out.append(") space")
        return str(self._add_rule(rule_name, "".join(out)))


# an integer's bounds as the grammar writes them: past 16 digits a bound is no bound (a reply
# never writes such a number; "minimum: -1e300" made a rule of 300 digits a place, and 50 of
# them a 110 MB grammar in 8 s of the server's event loop). A single bound is written as the
# range up to the other end: llama.cpp's single-bound branch lets "minimum: 100" take 10 to 19.
_WIDEST = 10**16 - 1


def _integer_bounds(schema: dict[str, Any]) -> tuple[int, int] | None:
    """(lowest, highest) an integer schema allows, within +-_WIDEST; None for other schemas and
    an integer with no bound."""
    if schema.get("type") != "integer" or any(k in schema for k in ("enum", "const", "$ref")):
        return None
    lows = [math.ceil(schema["minimum"])] if _is_number(schema.get("minimum")) else []
    if _is_number(schema.get("exclusiveMinimum")):
        lows.append(math.floor(schema["exclusiveMinimum"]) + 1)
    highs = [math.floor(schema["maximum"])] if _is_number(schema.get("maximum")) else []
    if _is_number(schema.get("exclusiveMaximum")):
        highs.append(math.ceil(schema["exclusiveMaximum"]) - 1)
    lows, highs = [x for x in lows if abs(x) <= _WIDEST], [x for x in highs if abs(x) <= _WIDEST]
    if not lows and not highs:
        return None
    return max(lows, default=-_WIDEST), min(highs, default=_WIDEST)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _min_max_int(lo: int, hi: int, out: list[str]) -> None:
    """GBNF for the integers from ``lo`` to ``hi``, written into ``out``: llama.cpp's
    ``build_min_max_int`` (common/json-schema-to-grammar.cpp) where both bounds are given."""

    def digit_range(a: str, b: str) -> None:
        out.append(f"[{a}]" if a == b else f"[{a}-{b}]")

    def more_digits(n: int) -> None:
        out.append("[0-9]" if n == 1 else "[0-9]{" + str(n) + "}")

    def uniform_range(a: str, b: str) -> None:  # from a to b, as many digits each
        i = 0
        while i < len(a) and i < len(b) and a[i] == b[i]:
            i += 1
        if i > 0:
            out.append(f'"{a[:i]}"')
        if i < len(a) and i < len(b):
            if i > 0:
                out.append(" ")
            sub_len = len(a) - i - 1
            if sub_len > 0:
                a_sub, b_sub = a[i + 1:], b[i + 1:]
                zeros, nines = "0" * sub_len, "9" * sub_len
                reached = False
                out.append("(")
                if a_sub == zeros:
                    digit_range(a[i], chr(ord(b[i]) - 1))
                    out.append(" ")
                    more_digits(sub_len)
                else:
                    out.append(f"[{a[i]}] (")
                    uniform_range(a_sub, nines)
                    out.append(")")
                    if ord(a[i]) < ord(b[i]) - 1:
                        out.append(" | ")
                        if b_sub == nines:
                            digit_range(chr(ord(a[i]) + 1), b[i])
                            reached = True
                        else:
                            digit_range(chr(ord(a[i]) + 1), chr(ord(b[i]) - 1))
                        out.append(" ")
                        more_digits(sub_len)
                if not reached:
                    out.append(" | ")
                    digit_range(b[i], b[i])
                    out.append(" ")
                    uniform_range(zeros, b_sub)
                out.append(")")
            else:
                out.append(f"[{a[i]}-{b[i]}]")

    if lo < 0 and hi < 0:
        out.append('"-" (')
        _min_max_int(-hi, -lo, out)
        out.append(")")
        return
    if lo < 0:
        out.append('"-" (')
        _min_max_int(0, -lo, out)
        out.append(") | ")
        lo = 0
    lo_s, hi_s = str(lo), str(hi)
    for digits in range(len(lo_s), len(hi_s)):
        uniform_range(lo_s, "9" * digits)
        lo_s = "1" + "0" * digits
        out.append(" | ")
    uniform_range(lo_s, hi_s)


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
    text = read_text_file(path, "file.what_schema", SchemaError)
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
