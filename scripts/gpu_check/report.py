"""The GPU check's report: gpu-check.json (everything) and gpu-check.md (the figures the issue
asks for, each beside its goal). Written after every step, atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

GOALS = {
    "decode": 0.95,  # our tg over llama-bench's tg128, all layers on the GPU
    "vram": 0.05,  # the plan within 5% of what was allocated
    "lookup": 1.5,  # prompt lookup over plain decoding on the quoting task
}


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _f(x: Any, fmt: str = "{:.2f}") -> str:
    return "-" if x is None else fmt.format(x)


def _mib(n: Any) -> str:
    return "-" if n is None else f"{n / 2**20:.1f}"


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("meets the goal" if ok else "misses the goal")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(" ".join(cell.split()).replace("|", "/") for cell in row) + " |" for row in rows)]


def headline(results: dict[str, Any]) -> dict[str, Any]:
    """The figures the issue's closing note asks for, with whether each meets its goal."""
    steps = results.get("steps", {})
    out: dict[str, Any] = {}
    build = results.get("build") or {}
    out["build_seconds"] = build.get("seconds")
    rows = (steps.get("bench") or {}).get("rows") or []
    n_gen = (steps.get("bench") or {}).get("n_gen", 128)
    full = [r for r in rows if r["n_gpu_layers"] == r["total_layers"] and r.get(f"tg{n_gen}_ratio")]
    if full:
        worst = min(r[f"tg{n_gen}_ratio"] for r in full)
        out["decode_ratio_full_offload"] = {r["model"]: r[f"tg{n_gen}_ratio"] for r in full}
        out["decode_meets_goal"] = worst >= GOALS["decode"]
    cases = (steps.get("fit_vs_vram") or {}).get("cases") or []
    ratios = [c["fit_over_nvml_less_context"] for c in cases if c.get("fit_over_nvml_less_context")]
    if ratios:
        out["vram_fit_over_nvml"] = {"min": min(ratios), "max": max(ratios)}
        out["vram_meets_goal"] = all(abs(r - 1) <= GOALS["vram"] for r in ratios)
    llama = [c["fit_over_llama"] for c in cases if c.get("fit_over_llama")]
    if llama:
        out["vram_fit_over_llama_buffers"] = {"min": min(llama), "max": max(llama)}
    spec = steps.get("speculative") or {}
    if spec.get("lookup_over_off") is not None:
        out["lookup_over_off"] = spec["lookup_over_off"]
        out["lookup_meets_goal"] = spec["lookup_over_off"] >= GOALS["lookup"]
    for key in ("lookup_over_llama_ngram_mod", "draft_over_off", "draft_over_llama_draft"):
        if spec.get(key) is not None:
            out[key] = spec[key]
    serve = steps.get("serve_scaling") or {}
    if serve.get("scaling_top_over_1") is not None:
        out[f"serve_{serve['top_clients']}_over_1"] = serve["scaling_top_over_1"]
    return out


def markdown(results: dict[str, Any]) -> str:
    steps = results.get("steps", {})
    head = headline(results)
    env = steps.get("environment") or {}
    build = results.get("build") or {}
    lines = ["# GPU check", ""]
    device = [env.get("nvidia_smi") or "no NVIDIA GPU (CUDA off: a dry run)", env.get("nvcc"),
              f"Python {env.get('python', '?')}",
              f"llama-cpp-python {(results.get('kit') or {}).get('llama_version', '?')}"]
    lines.append("Device: " + "; ".join(d for d in device if d) + ".")
    absent = (results.get("kit") or {}).get("models_not_here") or []
    if absent:
        lines.append(f"Checked without {', '.join(absent)} (run with --now: its parts never came).")
    for note in build.get("notes") or []:
        lines.append(f"Build note: {note}.")
    lines.append(f"Build: {_f(build.get('seconds'), '{:.0f}')} s (configure {_f(build.get('configure_s'), '{:.0f}')}, "
                 f"compile {_f(build.get('build_s'), '{:.0f}')}), CUDA {'on' if build.get('cuda') else 'off'}, "
                 f"{build.get('jobs', '?')} jobs; whole call {_f(results.get('wall_s'), '{:.0f}')} s.")
    load = steps.get("engine_load") or {}
    if load.get("probes"):
        first = load.get("first_failing")
        lines += ["", "## Loading SmolLM2 with every layer on the GPU, one layer of the product at a time", "",
                  f"First to fail: {first}." if first else "Every probe of the product loaded and decoded.", ""]
        if load.get("control"):
            lines += [f"(The control probe, \"{load['control']}\", loads in the order that crashed on the "
                      "H200 until 2026-12-04; its crash, if any, is not the product's.)", ""]
        lines += _table(["probe", "exit", "said"],
                        [[name, str(r["rc"]), r.get("said") or r.get("error") or ""] for name, r in load["probes"].items()])
        for name, r in load["probes"].items():
            if r.get("crash"):
                lines += ["", f"### {name}: where it crashed", "", "```", r["crash"], "```"]
        if load.get("locale_bindings"):
            lines += ["", "### std::locale's symbols as the dynamic linker bound them (the probe with the engine's libraries first)",
                      "", "```", *load["locale_bindings"], "```"]
    native = env.get("native") or {}
    if native:
        lines += ["", "## The C++ runtime each native library resolves to", ""]
        if "missing" in native:
            lines.append(f"Not known: {native['missing']}.")
        else:
            lines += _table(["library", "links", "std:: symbols it defines", "of them std::locale's"],
                            [[name, ", ".join(r.get("links") or []) or r.get("error") or "-",
                              str(r.get("std_symbols", "-")), "; ".join(r.get("locale_symbols") or []) or "-"]
                             for name, r in native.items()])
    lines += ["", "## Against the goals", "", "| figure | value | goal | |", "|---|---|---|---|"]
    dec = head.get("decode_ratio_full_offload")
    lines.append(f"| our decode / llama-bench tg, all layers on the GPU | "
                 f"{', '.join(f'{k}: {v:.3f}' for k, v in dec.items()) if dec else '-'} | ≥ 0.95 | "
                 f"{_verdict(head.get('decode_meets_goal'))} |")
    v = head.get("vram_fit_over_nvml")
    span = f"{v['min']:.3f} to {v['max']:.3f}" if v else "-"
    lines.append(f"| fit estimate / NVML (less the CUDA context) | {span} | within 5% | "
                 f"{_verdict(head.get('vram_meets_goal'))} |")
    lk = head.get("lookup_over_off")
    lines.append(f"| prompt lookup / off, quoting | {_f(lk, '{:.2f}x')} | ≥ 1.5x | {_verdict(head.get('lookup_meets_goal'))} |")
    lines.append(f"| our lookup / llama-speculative-simple ngram-mod | {_f(head.get('lookup_over_llama_ngram_mod'), '{:.2f}x')} | | |")
    lines.append(f"| draft pair (SmolLM2 F16 ← Q4_1) / off, quoting | {_f(head.get('draft_over_off'), '{:.2f}x')} | | |")
    lines.append(f"| our draft pair / llama-speculative-simple draft | {_f(head.get('draft_over_llama_draft'), '{:.2f}x')} | | |")
    for key, val in head.items():
        if key.startswith("serve_"):
            lines.append(f"| serve aggregate, {key.split('_')[1]} clients / 1 | {val:.2f}x | | |")
    bench = steps.get("bench") or {}
    if bench.get("rows"):
        n_p, n_g = bench["n_prompt"], bench["n_gen"]
        lines += ["", f"## bench against llama-bench (pp{n_p}, tg{n_g}, {bench['repetitions']} runs, "
                  f"{bench['threads']} threads)", ""]
        lines += _table(
            ["model", "GPU layers", "pp ours", "pp llama-bench", "ratio", "tg ours", "tg llama-bench", "ratio",
             "TTFT ms", "chat tok/s"],
            [[r["model"], f"{r['n_gpu_layers']}/{r['total_layers']}", _f(r.get(f"pp{n_p}_ours_ts"), "{:.0f}"),
              _f(r.get(f"pp{n_p}_llama_bench_ts"), "{:.0f}"), _f(r.get(f"pp{n_p}_ratio"), "{:.3f}"),
              _f(r.get(f"tg{n_g}_ours_ts"), "{:.1f}"), _f(r.get(f"tg{n_g}_llama_bench_ts"), "{:.1f}"),
              _f(r.get(f"tg{n_g}_ratio"), "{:.3f}"), _f(r.get("ttft_ms"), "{:.1f}"), _f(r.get("chat_ts"), "{:.1f}")]
             for r in bench["rows"]])
    vram = steps.get("fit_vs_vram") or {}
    if vram.get("cases"):
        lines += ["", f"## fit against what was allocated (MiB; CUDA context and libraries: "
                  f"{_mib(vram.get('context_overhead_bytes'))} MiB)", ""]
        lines += _table(
            ["model", "context", "K/V", "layers", "fit GPU", "llama.cpp GPU buffers", "NVML process", "fit/llama",
             "fit/(NVML-context)", "fit CPU", "fit CPU/llama"],
            [[c["model"], str(c["context"]), c["kv"], f"{c['gpu_layers']}/{c['total_layers']}",
              _mib(c["fit_gpu_bytes"]), _mib(c["llama_gpu_bytes"]), _mib(c.get("process_bytes")),
              _f(c.get("fit_over_llama"), "{:.3f}"), _f(c.get("fit_over_nvml_less_context"), "{:.3f}"),
              _mib(c["fit_cpu_bytes"]), _f(c.get("fit_cpu_over_llama"), "{:.3f}")]
             for c in vram["cases"]])
    serve = steps.get("serve_scaling") or {}
    if serve.get("rows"):
        lines += ["", "## serve (bench/load.py)", ""]
        lines += _table(
            ["clients", "agg tok/s", "TTFT p50 ms", "client min tok/s", "plain loop tok/s",
             "llama-batched-bench tok/s", "errors"],
            [[str(r["clients"]), f"{r['agg_tps']:.1f}", f"{r['ttft_p50_ms']:.0f}", f"{r['client_min_tps']:.1f}",
              _f(r.get("plain_tps"), "{:.1f}"), _f(r.get("llama_tps"), "{:.1f}"), str(r["errors"])]
             for r in serve["rows"]])
    spec = steps.get("speculative") or {}
    if spec.get("tps") or spec.get("llama_ngram_mod") or spec.get("llama_draft"):
        lines += ["", "## speculative decoding on the quoting task (tok/s)", ""]
        for k, val in (spec.get("tps") or {}).items():
            rep = (spec.get("replay") or {}).get(k) or {}
            acc = rep.get("acceptance")
            lines.append(f"- {k}: {_f(val, '{:.1f}')}" + (f", {acc * 100:.0f}% of drafts accepted" if acc else ""))
        for k in ("llama_ngram_mod", "llama_draft"):
            if spec.get(k):
                lines.append(f"- llama-speculative-simple {k.split('_', 1)[1]}: {spec[k]['tps']:.1f} tok/s, "
                             f"{_f(spec[k].get('accept_percent'), '{:.0f}')}% accepted")
        pair = spec.get("packaged_pair")
        if pair:
            lines.append(f"- packaged pair {pair['target']} ← {pair['draft']}: "
                         + ("ran" if pair["ran"] else f"refused: {pair['message']}"))
    tui = steps.get("tui") or {}
    if tui.get("ok"):
        lines += ["", f"## TUI, headless: {tui.get('status')!s}", "",
                  f"One turn: {tui.get('predicted_n')} tokens at {_f(tui.get('predicted_per_second'), '{:.1f}')} tok/s, "
                  f"TTFT {_f(tui.get('ttft_ms'), '{:.0f}')} ms."]
    gap = steps.get("pp_gap") or {}
    if gap.get("variants"):
        lines += ["", f"## Where pp{gap['n_prompt']} goes (llama-bench: {gap['llama_bench_tps']:.0f} tok/s; "
                  f"{gap['threads']} threads; {gap['log_calls']} log callbacks while timed)", ""]
        lines += _table(
            ["context", "tok/s, two rounds", "best / llama-bench", "ms: fill", "in llama_decode", "synchronize"],
            [[name, " / ".join(f"{x:.0f}" for x in r["tps"]), f"{r['over_llama_bench']:.3f}",
              f"{r['ms'][-1]['fill']:.2f}", f"{r['ms'][-1]['decode']:.2f}", f"{r['ms'][-1]['synchronize']:.2f}"]
             for name, r in gap["variants"].items()])
    for name, rec in steps.items():
        if rec.get("crash"):
            lines += ["", f"## {name}: where it crashed", "", "```", rec["crash"], "```"]
    lines += ["", "## Steps", ""]
    lines += _table(["step", "result", "seconds"],
                    [[name, "ok" if rec.get("ok") else str(rec.get("error") or rec.get("skipped") or "?")[:200],
                      str(rec.get("seconds"))] for name, rec in steps.items()])
    return "\n".join(lines) + "\n"


def write_report(results: dict[str, Any], out: Path) -> str:
    results = {**results, "headline": headline(results)}
    _write(out / "gpu-check.json", json.dumps(results, indent=2, default=str))
    md = markdown(results)
    _write(out / "gpu-check.md", md)
    return md
