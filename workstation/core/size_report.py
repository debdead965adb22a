"""The ``size`` report: plain text for the terminal, Markdown with PNG charts for a file.

Charts are drawn with matplotlib's Agg backend (no display, no system libraries): tokens/s
per person against the number of people for the best options, and the memory stack (weights,
K/V cache, compute buffers) of each against its card's memory. The TUI draws the same
``sizing.chart_data`` in the terminal.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

from workstation.core.atomic import is_a_stream, named_output, write_bytes_atomic, write_named_file
from workstation.core.calibration import source_said
from workstation.core.catalog import human_bytes
from workstation.core.errors import WorkstationError
from workstation.core.invocation import cli
from workstation.core.memory_check import describe_history
from workstation.core.phrases import Lookup, local_number, say, speed_figure
from workstation.core.sizing import (
    THIS_MACHINE,
    SizingOption,
    SizingResult,
    _secs,
    chart_data,
    model_family,
)
from workstation.core.speed_model import gpu_check

PEOPLE_PNG = "people.png"
MEMORY_PNG = "memory.png"


def _ttft(o: SizingOption, lookup: Lookup | None = None) -> str:
    """The wait for the first word as the sentences say it (``sizing._secs``)."""
    return say([("size.overloaded", {}) if math.isinf(o.ttft_s) else _secs(o.ttft_s)], lookup)


def _row(i: int, o: SizingOption, lookup: Lookup | None = None) -> list[str]:
    """One option's cells, in ``lookup``'s language (its words and its way with figures)."""
    # memory as every size is said (human_bytes): "282 MB of 16 GB", not "0.3/16.0 GB"
    price = say([("size.here", {}) if o.here else ("size.price", {"price": f"{o.price_usd:,.0f}"})
                 if o.price_usd else ("size.no_price", {})], lookup)
    machine = say([("size.this_cpu", {})], lookup) if o.here and o.machine == THIS_MACHINE else o.machine
    misses = [p for i, m in enumerate(o.miss_phrases) for p in [("miss.and", {})] * bool(i) + [m]]
    return [str(i), machine, price, model_family(o.model), o.quant, o.kv_type, str(o.slots),
            say([("size.memory_of", {"need": human_bytes(o.need_bytes), "have": human_bytes(o.memory_bytes)})], lookup),
            # (an overloaded option's speed means nothing, as its wait: "–", not "0.0" read as "does not work")
            "–" if o.utilization >= 1 else local_number(speed_figure(o.tps_per_person, 1), lookup), _ttft(o, lookup),
            local_number(f"{o.docs_per_night:,}", lookup), say([o.quality_phrase], lookup),
            say([("size.yes", {})] if o.meets else misses, lookup)]


COLUMNS = ("number", "machine", "price", "model", "quant", "kv", "slots", "memory", "tps_person", "ttft", "docs_night",
           "quality", "meets")


def header(lookup: Lookup | None = None) -> list[str]:
    """The ranked table's column names in ``lookup``'s language (``size.col.*``; a Turkish table
    had English ones under Turkish headings)."""
    return [say([(f"size.col.{c}", {})], lookup) for c in COLUMNS]


def table_rows(result: SizingResult, top: int) -> list[SizingOption]:
    return result.shown(top)


def here_rows(result: SizingResult, top: int, lookup: Lookup | None = None) -> list[list[str]]:
    """The option the first line says of this PC as a row under the table ("PC" for its number),
    where the table lists cards only (it never said what the PC one has would do)."""
    here = result.this_pc()
    return [] if here is None or here in table_rows(result, top) else [["PC", *_row(0, here, lookup)[1:]]]


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def text_report(result: SizingResult, top: int = 10, lookup: Lookup | None = None) -> str:
    """The terminal's version: the headline, the ranked table and what its headers mean,
    calibration in two lines; the sentences in ``lookup``'s language (``size --lang``)."""
    rows = [_row(i, o, lookup) for i, o in enumerate(table_rows(result, top), 1)] + here_rows(result, top, lookup)
    names = header(lookup)
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(names)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()  # noqa: E731
    out = [say(result.answer_phrases(), lookup).strip(), "", say(result.headline_phrases(), lookup).strip(), "",
           fmt(names), *(fmt(r) for r in rows), "", say([("size.table_key", {})], lookup)]
    out += [say([("size.ranking", {})], lookup)] if result.meeting else []
    cal = result.calibration
    if cal:  # (figures too unsteady to go by: the source says how far off, and that this is the estimate)
        out.append(say([("size.speed_here", {"source": source_said(cal)})]
                       + ([("size.speed_off", {"off": f"{cal['mean_abs_error_pct']}%"})]
                          if cal.get("mean_abs_error_pct") is not None and not cal.get("too_noisy") else []), lookup))
    out.append(say([("size.gpu_speeds", {})], lookup))
    out.append(describe_history(result.memory_history, lookup))
    out += [say(note, lookup) for note in result.notes(top)]
    if result.skipped_models:
        out.append(say([("size.not_considered", {"models": ", ".join(result.skipped_models)})], lookup))
    return "\n".join(out)


def write_charts(data: dict[str, Any], folder: Path, lookup: Lookup | None = None) -> list[Path]:
    """The two PNG charts into ``folder``, their words in ``lookup``'s language; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def word(key: str) -> str:
        return say([(f"report.{key}", {})], lookup)

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for s in data["series"]:
        ax.plot(data["people"], s["values"], marker="o", markersize=3, label=s["label"])
    ax.axhline(data["target_tps"], color="grey", linestyle="--", linewidth=1, label=word("chart_target"))
    ax.axvline(data["workload_people"], color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel(word("chart_people"))
    ax.set_ylabel(word("chart_tps"))
    ax.set_title(word("chart_speed"))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(_save(fig, folder / PEOPLE_PNG))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    labels = [m["label"] for m in data["memory"]]
    x = list(range(len(labels)))
    bottom = [0.0] * len(labels)
    for key, name in (("weights", "chart_weights"), ("kv_cache", "chart_kv"), ("compute", "chart_compute")):
        vals = [m[key] for m in data["memory"]]
        ax.bar(x, vals, bottom=bottom, label=word(name))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.scatter(x, [m["capacity"] for m in data["memory"]], marker="_", s=900, color="black", label=word("chart_card"))
    ax.set_xticks(x, labels, rotation=15, ha="right", fontsize=7)
    ax.set_ylabel("GB")
    ax.set_title(word("chart_stack"))
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(_save(fig, folder / MEMORY_PNG))
    plt.close(fig)
    return paths


def _save(fig: Any, path: Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    write_bytes_atomic(path, buf.getvalue())  # in the report's own charts folder
    return path


def markdown_report(result: SizingResult, named: Path | str, top: int = 15, lookup: Lookup | None = None) -> list[Path]:
    """The Markdown report at ``out`` with its charts beside it (``<stem>-people.png``, ...), its
    words in ``lookup``'s language (``size --lang``)."""
    out = named_output(str(named))  # a typo in the folder is said, not made (nor its charts folder)
    # beside the report; a report written into /dev/stdout, /proc/self/fd/1… has them in the
    # folder it was run from (they were made in /dev)
    system = is_a_stream(out) and out.parts[1:2] in (("dev",), ("proc",))
    charts_dir = (Path.cwd() if system else out.parent) / f"{out.stem}-charts"
    charts = write_charts(chart_data(result), charts_dir, lookup)
    w = result.workload

    def word(key: str, **values: Any) -> str:
        return say([(f"report.{key}", values)], lookup)

    def figure(text: str) -> str:
        return local_number(text, lookup)

    lines = [f"# {word('title', name=w.name)}", "", f"**{say(result.answer_phrases(), lookup).strip()}**", "",
             say(result.headline_phrases(), lookup).strip(), ""]
    lines += [f"## {word('workload')}", "", markdown_table([word("what"), word("value")], [
        [word("people"), figure(f"{w.people:,}")], [word("chats"), figure(f"{w.chats_per_person_per_hour:,g}")],
        [word("prompt_reply"), f"{figure(f'{w.prompt_tokens:,}')} / {figure(f'{w.reply_tokens:,}')}"],
        [word("context"), word("context_value", n=f"{w.slot_context:,}")],
        [word("documents"), word("documents_value", n=f"{w.documents_per_day:,}", tokens=f"{w.document_tokens:,}",
                                 hours=f"{w.night_hours:g}")],
        [word("latency"), word("latency_value", ttft=f"{w.latency.ttft_s:g}", tps=f"{w.latency.tokens_per_second:g}")],
        [word("quality"), word("quality_value", loss=f"{w.quality.max_loss:.0%}", tasks=w.quality.tasks)
         if w.quality.tasks else word("no_quality")],
    ]), ""]
    lines += [f"## {word('ranked') if result.meeting else word('closest')}", "",
              word("meeting", n=f"{len(result.meeting):,}", total=f"{len(result.options):,}")
              + say([("size.ranking", {})], lookup), ""]
    lines += [markdown_table(header(lookup), [_row(i, o, lookup) for i, o in enumerate(table_rows(result, top), 1)]
                             + here_rows(result, top, lookup)), ""]
    for note in result.notes(top):
        lines += [say(note, lookup), ""]
    per_machine = result.best_per_machine()
    if per_machine:
        lines += [f"## {word('per_machine')}", "",
                  markdown_table(header(lookup), [_row(i, o, lookup) for i, o in enumerate(per_machine, 1)]), ""]
    lines += [f"## {word('charts')}", "", f"![{word('people_chart')}]({charts_dir.name}/{PEOPLE_PNG})", "",
              f"![{word('memory_chart')}]({charts_dir.name}/{MEMORY_PNG})", ""]
    cal = result.calibration
    lines += [f"## {word('calibrated')}", "", word("decode"), ""]
    if cal:
        lines += [word("this_cpu", source=source_said(cal)), ""]
        if cal.get("checks"):
            lines += [word("checks"), "",
                      markdown_table([say([(f"size.col.{c}", {})], lookup) for c in ("model", "slots", "measured")]
                                     + [word("predicted"), say([("size.col.error", {})], lookup)],
                                     [[c["model"], str(c["slots"]), figure(f"{c['measured_tps']:.1f}"),
                                       figure(f"{c['predicted_tps']:.1f}"), figure(f"{c['error_pct']:+.1f}%")]
                                      for c in cal["checks"]]), ""]
    lines += [f"**{word('gpus')}**{word('gpus_fitted')}", "",
              markdown_table([word("col.gpu"), say([("size.col.model", {})], lookup), word("col.test"),
                              word("col.published"), word("col.predicted"), say([("size.col.error", {})], lookup),
                              word("col.role"), word("col.source")],
                             [[r["gpu"], r["model"], r["test"], figure(f"{r['published']:.1f}"),
                               figure(f"{r['predicted']:.1f}"), figure(f"{r['error_pct']:+.1f}%"), r["role"],
                               r["source"]] for r in gpu_check()]), ""]
    lines += [f"## {word('memory')}", "", describe_history(result.memory_history, lookup), ""]
    lines += [f"## {word('assumptions')}", "", f"- {word('poisson')}", f"- {word('on_card')}",
              f"- {word('shapes', eval=cli('eval'))}", f"- {word('map_reduce')}", ""]
    write_named_file(out, "\n".join(lines), WorkstationError)
    return [out, *charts]

