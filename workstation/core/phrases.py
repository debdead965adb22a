"""What the core says in sentences that the TUI shows in Turkish too.

A sentence is a list of phrases, each a key and its values (a value may be a phrase itself):
``[("fit.gpu", {"where": ("fit.where_one", {}), "used": "5.2", "total": "24.0"})]``. The
command line and JSON print it in English with ``say(phrases)``; the TUI passes its locale's
lookup (``say(phrases, texts.get)``), and Turkish lives in ``tui/locales/tr.yaml`` under the
same keys. English is here, in one place: the planner's verdicts and the sizing headline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Phrase = tuple[str, dict[str, Any]]

ENGLISH: dict[str, str] = {
    # the memory plan's verdict (planner.plan)
    "fit.gpu_too_small": ("does not fit: {layers} layers on the {where} need {need} GB of VRAM, "
                          "{usable} GB is usable; set gpu_layers to auto ({auto} layers fit)"),
    "fit.too_big": "does not fit: needs {need} GB, this machine has {have} GB free",
    "fit.context_hint": " (the {context}-token context alone takes {kv} GB; try a smaller context or q8_0 K/V)",
    "fit.gpu": "fits entirely on the {where}: {used} of {total} GB",
    "fit.partial": ("{layers} of {n_layer} layers on the {where} ({used} of {total} GB), "
                    "the rest on the CPU: it runs, more slowly"),
    "fit.cpu": "runs on the CPU{why}: needs {need} GB of the {free} GB of memory free",
    "fit.cpu_layers_zero": " (gpu_layers is 0)",
    "fit.cpu_no_room": " (no room on the GPU)",
    "fit.where_one": "GPU",
    "fit.where_many": "{n} GPUs",
    "fit.draft_too_big": "does not fit with its draft model: ",
    "fit.draft_pair": "; with its draft model {on_gpu}{ram} GB in RAM",
    "fit.draft_on_gpu": "{gpu} GB on the GPU and ",
    # the sizing headline (sizing.SizingResult.headline)
    "headline.here_cpu": "This machine's CPU is enough",
    "headline.use": "Use {machine}",
    "headline.buy": "Buy a {machine}",
    "headline.buy_priced": "Buy a {machine} (about ${price})",
    "headline.thinking_off": " with thinking off",
    "headline.slot": "{n} slot",
    "headline.slots": "{n} slots",
    "headline.best": ("{where}: run {model}{thinking} at {quant} with a {kv} K/V cache and {slots}; "
                        "each of {people} people gets about {tps} tokens/s at the busy hour, the first "
                        "token in {ttft}, and {docs} documents fit in a night."),
    "headline.nothing_fits": ("Nothing meets this workload: no candidate model fits any candidate machine "
                            "at {context} tokens per slot; try a smaller context or more memory."),
    "headline.closest": "Nothing meets this workload ({people} people). Closest: {what} (misses: {misses}); {served}.",
    "headline.closest_what": "{machine}: {model} {quant}, K/V {kv}, {slots}",
    "headline.would_serve": "it would serve {people} people at these targets",
    "headline.misses_one": "it misses the targets even for one person",
}


def say(phrases: list[Phrase], lookup: Callable[[str], str | None] | None = None) -> str:
    """The sentence's words: each phrase's text from ``lookup(key)`` (a translation, None where
    there is none) or the English above, its values filled in (phrases among them first)."""

    def one(key: str, values: dict[str, Any]) -> str:
        text = (lookup(key) if lookup else None) or ENGLISH[key]
        filled = {k: one(*v) if isinstance(v, tuple) else v for k, v in values.items()}
        return text.format(**filled) if filled else text

    return "".join(one(key, values) for key, values in phrases)
