"""What to change where a model's K/V cache is what does not fit: the largest context that
fits this memory, and the one that fits with q8_0 K/V, those that run fast named first."""

from __future__ import annotations

from collections.abc import Callable

from workstation.core.catalog import human_bytes
from workstation.core.model_info import ModelInfo
from workstation.core.phrases import Phrase


def context_hint(info: ModelInfo, context: int, type_k: str, type_v: str, kv_total: int,
                 room: Callable[[int, str, str], int | None]) -> list[Phrase]:
    """What to change where the K/V cache is what does not fit, with the figures for this
    memory: the largest context that fits (halving down to 512 tokens), and with q8_0 K/V
    where the cache is f16 ("try a smaller context" left the user guessing which). Never more
    than the model was trained for: asked for 1,048,576 of a model trained for 8,192, it named
    1,048,576 with q8_0 K/V, and the note after it said answers degrade past 8,192.
    ``room``: the bytes of weights read from the disk as it runs with that context (0: it runs
    fast), None where it does not fit. The contexts that run fast are named first, and a larger
    one that runs only slowly is said to (it named such a context as one that fits, and that
    context crawled); where none runs fast, that what it names runs slowly."""
    top = min(context, info.context_length) if info.context_length > 0 else context
    rooms: dict[tuple[int, str, str], int | None] = {}

    def largest(k: str, v: str, fast: bool, from_top: bool) -> int | None:
        """The largest context from ``top`` (itself where ``from_top``), halving, that fits
        (``fast``: that runs fast)."""
        def ok(ctx: int) -> bool:
            if (ctx, k, v) not in rooms:
                rooms[ctx, k, v] = room(ctx, k, v)
            paged = rooms[ctx, k, v]
            return paged is not None and (not fast or paged == 0)

        ctx = top
        if (from_top or top < context) and ok(top):
            return top
        while ctx > 512:
            ctx //= 2
            if ok(ctx):
                return ctx
        return None

    fast_own, any_own = largest(type_k, type_v, True, False), largest(type_k, type_v, False, False)
    fast_q8 = any_q8 = None
    if {type_k, type_v} & {"f16", "f32", "bf16"}:
        fast_q8, any_q8 = largest("q8_0", "q8_0", True, True), largest("q8_0", "q8_0", False, True)
    tail: list[Phrase] = []
    if fast_own is not None or fast_q8 is not None:
        smaller, q8 = fast_own, fast_q8
        if any_own is not None and any_own > max(fast_own or 0, fast_q8 or 0):  # (q8_0's runs fast: that one)
            tail = [("fit.context_hint_slower", {"slow": f"{any_own:,}"})]
    else:
        smaller, q8 = any_own, any_q8
        if smaller is not None or q8 is not None:
            tail = [("fit.context_hint_slow", {})]
    said = {"context": f"{context:,}", "kv": human_bytes(kv_total)}
    if q8 is not None and (smaller is None or q8 > smaller):
        if smaller is None:
            return [("fit.context_hint_q8", {**said, "q8": f"{q8:,}"}), *tail]
        return [("fit.context_hint_both", {**said, "fits": f"{smaller:,}", "q8": f"{q8:,}"}), *tail]
    if smaller is not None:
        return [("fit.context_hint_fits", {**said, "fits": f"{smaller:,}"}), *tail]
    return [("fit.context_hint", said)]
