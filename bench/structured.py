"""What a JSON-schema constraint costs: decode tok/s under a schema (and under "any JSON object")
against free text on the same prompt, and the time to compile a large schema.

Turns alternate (free, schema, json_object) for ``--rounds`` rounds on one loaded engine, so a
change in the machine's load hits all three alike; each figure is the median of its turns'
``predicted_per_second`` (decode only: the prompt is the same and cached after the first turn).
Free text runs with ``ignore_eos`` to ``--tokens``; the schema (an array of at least 12 line
items) keeps a constrained reply going about as long. Compile time: a generated schema of 50
properties with nested objects, arrays and enums, checked against its meta-schema and turned
into GBNF by llama-cpp-python's converter (cold, then again from the kept conversions), then
parsed by llama.cpp's grammar sampler (``compile_grammar``, once per request), median of
``--compiles`` runs each.

    .venv/bin/python bench/structured.py [--rounds 3] [--tokens 160] [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workstation.core.engine import Engine  # noqa: E402
from workstation.core.grammar import compile_grammar  # noqa: E402
from workstation.core.packaged_models import ensure  # noqa: E402
from workstation.core.profile_check import profile_from_dict  # noqa: E402
from workstation.core.profiles import Constraints, Sampling  # noqa: E402
from workstation.core.structured_output import (  # noqa: E402
    JSON_OBJECT_GRAMMAR,
    check_reply,
    clear_schema_cache,
    schema_constraints,
    schema_grammar,
)

PROMPT = (
    "List the line items of this delivery as JSON: 12 boxes of A4 paper, 3 staplers, 40 pens, "
    "2 toner cartridges, 5 folders, 1 shredder, 8 notebooks, 6 rulers, 4 desk lamps, 10 markers, "
    "2 whiteboards, 7 scissors."
)
ITEMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "minItems": 12,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 24},
                    "quantity": {"type": "integer"},
                    "unit": {"enum": ["box", "piece", "pack"]},
                },
                "required": ["name", "quantity", "unit"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["items"],
    "additionalProperties": False,
}


def large_schema(n: int = 50) -> dict[str, Any]:
    """``n`` properties cycling through strings, enums, numbers, nested objects and arrays."""
    props: dict[str, Any] = {}
    for i in range(n):
        kind = i % 5
        if kind == 0:
            props[f"text_{i}"] = {"type": "string", "maxLength": 40}
        elif kind == 1:
            props[f"choice_{i}"] = {"enum": [f"option-{i}-{j}" for j in range(6)]}
        elif kind == 2:
            props[f"amount_{i}"] = {"type": "number"}
        elif kind == 3:
            props[f"party_{i}"] = {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "vat_id": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{8,12}$"},
                    "address": {
                        "type": "object",
                        "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                                       "country": {"enum": ["DE", "FR", "TR", "IT", "ES"]}},
                        "required": ["city", "country"],
                    },
                },
                "required": ["name"],
            }
        else:
            props[f"lines_{i}"] = {
                "type": "array",
                "maxItems": 20,
                "items": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"},
                                                           "tax": {"enum": [0, 7, 19]}},
                          "required": ["sku", "qty"]},
            }
    return {"type": "object", "properties": props, "required": list(props)[: n // 2]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=160)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compiles", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    model = ensure("smollm2-135m-instruct-q4_1")
    profile = profile_from_dict(
        {"name": "bench-structured", "model": str(model), "context": 2048, "threads": args.threads,
         "gpu_layers": 0, "system_prompt": ""},
        "<bench>",
    )
    kinds = {
        "free text": None,
        "json_schema": schema_constraints(ITEMS_SCHEMA),
        "json_object": Constraints(grammar=JSON_OBJECT_GRAMMAR),
    }
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    tokens: dict[str, list[int]] = {k: [] for k in kinds}
    valid: list[bool] = []
    messages = [{"role": "user", "content": PROMPT}]
    with Engine(profile) as eng:
        eng.run_chat(messages, Sampling(temperature=0.0, repeat_penalty=1.0, max_tokens=8))  # warm the cache
        for _ in range(args.rounds):
            for kind, constraints in kinds.items():
                sampling = Sampling(temperature=0.0, repeat_penalty=1.0, max_tokens=args.tokens,
                                    ignore_eos=constraints is None)
                final = eng.run_chat(messages, sampling, constraints=constraints)
                rates[kind].append(final.metrics.predicted_per_second)
                tokens[kind].append(final.metrics.predicted_n)
                if kind == "json_schema":
                    valid.append(check_reply(final.text, ITEMS_SCHEMA).valid)
        big = large_schema()
        convert, cached, parse = [], [], []
        grammar = ""
        for _ in range(args.compiles):
            clear_schema_cache()
            t0 = time.perf_counter()
            grammar = schema_grammar(big)  # check against the meta-schema + convert to GBNF
            t1 = time.perf_counter()
            schema_grammar(big)  # the same schema again: the kept conversion
            t2 = time.perf_counter()
            compiled = compile_grammar(eng.model.vocab, grammar)
            t3 = time.perf_counter()
            compiled.close()
            convert.append((t1 - t0) * 1000)
            cached.append((t2 - t1) * 1000)
            parse.append((t3 - t2) * 1000)
    free = statistics.median(rates["free text"])
    out = {
        "model": model.name,
        "threads": args.threads,
        "rounds": args.rounds,
        "tok_s": {k: round(statistics.median(v), 2) for k, v in rates.items()},
        "ratio_vs_free": {k: round(statistics.median(v) / free, 3) for k, v in rates.items()},
        "tokens_per_turn": {k: round(statistics.median(v)) for k, v in tokens.items()},
        "schema_replies_valid": f"{sum(valid)}/{len(valid)}",
        "large_schema": {
            "properties": len(big["properties"]),
            "grammar_chars": len(grammar),
            "grammar_rules": sum(1 for line in grammar.splitlines() if "::=" in line),
            "convert_ms": round(statistics.median(convert), 2),
            "convert_again_ms": round(statistics.median(cached), 3),
            "llama_parse_ms": round(statistics.median(parse), 2),
        },
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{model.name}, {args.threads} threads, greedy, median of {args.rounds} turns each")
    print(f"{'reply':<12} {'tok/s':>8} {'vs free':>8} {'tokens':>7}")
    for kind in kinds:
        print(f"{kind:<12} {out['tok_s'][kind]:>8.2f} {out['ratio_vs_free'][kind]:>7.3f}x "
              f"{out['tokens_per_turn'][kind]:>7}")
    print(f"schema replies valid: {out['schema_replies_valid']} (a reply cut at --tokens is unfinished JSON)")
    ls = out["large_schema"]
    print(f"large schema ({ls['properties']} properties -> {ls['grammar_rules']} rules, {ls['grammar_chars']} chars): "
          f"check + convert {ls['convert_ms']:.2f} ms (the same schema again: {ls['convert_again_ms']:.3f} ms), "
          f"llama.cpp parse {ls['llama_parse_ms']:.2f} ms (median of {args.compiles})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
