"""What a child process of a given name has imported, asked from inside it (multiprocessing's
spawn start, as the program starts its own children): which of some module names it loaded."""

from __future__ import annotations

import sys
from multiprocessing.connection import Connection


def modules_loaded(conn: Connection, names: list[str]) -> None:
    conn.send([name for name in names if name in sys.modules])
    conn.close()


def loaded_in_a_child(process_name: str, module: str, names: list[str]) -> list[str]:
    """Of ``names``, those loaded in a fresh spawned process named ``process_name`` once it has
    imported ``module`` (as unpickling its target would)."""
    import importlib
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_imports_then_says, args=(child, module, names), name=process_name, daemon=True)
    proc.start()
    child.close()
    try:
        assert parent.poll(120), "the child said nothing"
        return parent.recv()
    finally:
        proc.join(10)
        parent.close()
        importlib.invalidate_caches()


def _imports_then_says(conn: Connection, module: str, names: list[str]) -> None:
    import importlib

    importlib.import_module(module)
    modules_loaded(conn, names)
