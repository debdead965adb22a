"""Fixed long English texts for benchmarks, taken from the Python standard library's own
documentation strings (present on every machine with the same Python version, never downloaded)."""

from __future__ import annotations

import importlib
import inspect

MODULES = (
    "argparse", "asyncio", "collections", "csv", "datetime", "decimal", "email", "functools",
    "http.client", "json", "logging", "pathlib", "re", "sqlite3", "string", "subprocess",
    "textwrap", "threading", "unittest", "urllib.parse", "zipfile",
)


def stdlib_doc_text(min_chars: int = 60_000) -> str:
    """Module and class docstrings of a fixed list of stdlib modules, in a fixed order."""
    parts: list[str] = []
    total = 0
    for name in MODULES:
        mod = importlib.import_module(name)
        docs = [inspect.getdoc(mod) or ""]
        for _attr, obj in sorted(vars(mod).items()):
            if inspect.isclass(obj) and getattr(obj, "__module__", "") == mod.__name__:
                docs.append(inspect.getdoc(obj) or "")
        for doc in docs:
            if len(doc) > 200:
                parts.append(doc)
                total += len(doc)
        if total >= min_chars:
            break
    return "\n\n".join(parts)
