"""Load test for ``workstation serve``: N concurrent streaming clients, side by side.

For each client count (1, 2, 4 by default) every client sends one streamed ``/v1/completions``
request at the same moment with its own ~``--prompt-tokens`` prompt and ``max_tokens`` fixed
with ``ignore_eos`` (so every reply is exactly ``--max-tokens`` long, like llama-batched-bench's
pp128 + tg128). Reported per client count:

  TTFT p50 / p95      request sent -> first token, ms (client side)
  agg tok/s           aggregate decode rate in the window where every client is decoding
                      (tokens streamed in it / its length), like llama-batched-bench's S_TG
  e2e tok/s           all tokens / (last token - first request sent): prefill and queueing included
  x1                  agg tok/s over the single-client figure of this same run
  client min/mean     per-client decode tok/s (tokens after the first / own decode time)
  errors, lost        failed requests; requests that did not bring exactly max_tokens tokens
  plain loop          reference measured right after each level in this process: a plain
                      Python loop over the batch API, same N, model, threads (no HTTP, no
                      scheduler), so "srv/plain" is a ratio under the same machine load
  in decode           share of the server's busy time spent inside llama_decode (its
                      decode thread: the rest is Python between steps and waiting for the GIL)
  llama.cpp           llama-batched-bench's S_TG for the same N, 128+128, run right after
                      (when the binary from ../shared/tools/llama-anchors is there; see
                      bench/anchors.py for where it is looked for): the machine's own ceiling
                      for scaling, measured in this run rather than on another day

Goal (issue 9): agg at 4 clients >= 1.6x the single-client figure, no client below half the
mean. Anchors on the 2-core dev machine (SmolLM2 Q4_1, 128+128): llama-batched-bench 73 / 96 /
117 / 122 tok/s at 1 / 2 / 4 / 8 sequences, a plain Python loop 77 / 108 / 135 / 149.

    .venv/bin/python bench/load.py -p office-cpu --clients 1,2,4 --max-tokens 128

Starts its own ``workstation serve`` (``--parallel`` = the largest client count) on a free
loopback port, with a fresh data folder, unless ``--url`` points at a running server. Each run
also prints the server's accounting cost per request (keys, quota, counters on the request
path; audit line and usage row in the writer thread), from its ``/metrics``.

``--two-keys`` (issue 19) measures fairness between people instead: keys ``alice`` and ``bob``
(``--max-parallel`` slots each; by default the server's own cap, ``--parallel`` - 1); bob's TTFT alone, then with
alice sending ``--flood`` long requests at once (bob sends once her admitted ones are decoding);
goal: bob's TTFT within 2x of alone. The
accounting cost printed then is the one with keys (compare with a plain run: without keys).

    .venv/bin/python bench/load.py -p office-cpu --two-keys --parallel 4 --flood 10
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOPICS = ["printers", "spreadsheets", "meetings", "coffee machines", "filing cabinets", "email",
          "staplers", "calendars", "desk chairs", "whiteboards", "phone calls", "reports"]


def prompt_for(i: int, n_words: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    head = f"Client {i} asks about {topic}. "
    body = (f"Here are some notes about {topic} in a busy office, collected from staff. " * 40).split()
    return head + " ".join(body[: max(1, n_words)]) + f"\nNow write a long, detailed story about {topic}:"


@dataclass
class Result:
    client: int
    t_send: float = 0.0
    t_first: float = 0.0
    t_last: float = 0.0
    tokens: int = 0
    chunks: int = 0
    prompt_tokens: int = 0
    finish: str | None = None
    error: str | None = None
    server: dict = field(default_factory=dict)
    stamps: list[float] = field(default_factory=list)  # arrival time of every text chunk

    @property
    def ttft_ms(self) -> float:
        return (self.t_first - self.t_send) * 1000

    @property
    def decode_tps(self) -> float:
        span = self.t_last - self.t_first
        return (self.tokens - 1) / span if span > 0 and self.tokens > 1 else 0.0


def one_request(url: str, headers: dict, i: int, prompt: str, max_tokens: int, start: threading.Barrier,
                first: threading.Event | None = None) -> Result:
    res = Result(client=i)
    body = {"model": "bench", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0,
            "stream": True, "stream_options": {"include_usage": True}, "ignore_eos": True}
    with httpx.Client(timeout=600, headers=headers) as client:
        start.wait()
        res.t_send = time.perf_counter()
        try:
            with client.stream("POST", f"{url}/completions", json=body) as r:
                if r.status_code != 200:
                    r.read()
                    res.error = f"HTTP {r.status_code}: {r.text[:200]}"
                    return res
                for line in r.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    chunk = json.loads(data)
                    if "error" in chunk:
                        res.error = str(chunk["error"])
                        break
                    if chunk.get("usage"):
                        res.tokens = chunk["usage"]["completion_tokens"]
                        res.prompt_tokens = chunk["usage"]["prompt_tokens"]
                    for c in chunk.get("choices") or []:
                        if c.get("text"):
                            now = time.perf_counter()
                            if not res.chunks:
                                res.t_first = now
                                if first is not None:
                                    first.set()
                            res.t_last = now
                            res.chunks += 1
                            res.stamps.append(now)
                        if c.get("finish_reason"):
                            res.finish = c["finish_reason"]
                    if chunk.get("timings"):
                        res.server = chunk["timings"]
        except httpx.HTTPError as err:
            res.error = f"{type(err).__name__}: {err}"
    return res


def server_counters(url: str, headers: dict) -> dict[str, float]:
    """The server's own workstation:* counters from /metrics (empty for other servers)."""
    try:
        text = httpx.get(url.removesuffix("/v1") + "/metrics", headers=headers, timeout=10).text
    except httpx.HTTPError:
        return {}
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("workstation:"):
            name, _, value = line.partition(" ")
            try:
                out[name.removeprefix("workstation:")] = float(value)
            except ValueError:
                pass
    return out


BATCHED_BENCH_COLUMNS = {"S_PP": 6, "S_TG": 8, "S": 10}  # t/s columns of its table


def batched_bench_tps(
    bin_dir: Path, model: Path, n: int, threads: int, pp: int = 128, tg: int = 128, column: str = "S_TG"
) -> float:
    """llama-batched-bench's rate with ``n`` sequences of pp + tg tokens: decode (S_TG), prompt
    (S_PP) or both together (S, all tokens over the whole time)."""
    cmd = [str(bin_dir / "llama-batched-bench"), "-m", str(model), "-c", str((pp + tg) * n + 64), "-b", "512",
           "-ub", "512", "-npp", str(pp), "-ntg", str(tg), "-npl", str(n), "-t", str(threads), "-fa", "on"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True).stdout
    rows = [line.split("|") for line in out.splitlines() if line.startswith("|") and line.split("|")[1].strip().isdigit()]
    return float(rows[-1][BATCHED_BENCH_COLUMNS[column]]) if rows else 0.0


def run_level(url: str, headers: dict, n: int, args: argparse.Namespace, round_: int) -> dict:
    start = threading.Barrier(n)
    results: list[Result] = [Result(client=i) for i in range(n)]

    def worker(i: int) -> None:
        prompt = prompt_for(i + 100 * round_ + 1000 * n, args.prompt_words)
        results[i] = one_request(url, headers, i, prompt, args.max_tokens, start)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [r for r in results if r.error is None and r.chunks]
    errors = [r.error for r in results if r.error]
    lost = sum(1 for r in results if r.error is None and (r.tokens != args.max_tokens or r.finish != "length"))
    ttfts = sorted(r.ttft_ms for r in ok)
    agg = e2e = 0.0
    if ok:
        # steady state: the window in which every client is decoding (llama-batched-bench's S_TG)
        lo, hi = max(r.t_first for r in ok), min(r.t_last for r in ok)
        in_window = sum(sum(1 for t in r.stamps if lo < t <= hi) for r in ok)
        agg = in_window / (hi - lo) if hi > lo else 0.0
        e2e = sum(r.tokens for r in ok) / (max(r.t_last for r in ok) - min(r.t_send for r in ok))
    per = [r.decode_tps for r in ok]
    return {
        "clients": n,
        "ttft_p50_ms": statistics.median(ttfts) if ttfts else 0.0,
        "ttft_p95_ms": ttfts[min(len(ttfts) - 1, round(0.95 * (len(ttfts) - 1)))] if ttfts else 0.0,
        "agg_tps": agg,
        "e2e_tps": e2e,
        "client_min_tps": min(per) if per else 0.0,
        "client_mean_tps": statistics.fmean(per) if per else 0.0,
        "server_tps_mean": statistics.fmean(r.server.get("predicted_per_second", 0.0) for r in ok) if ok else 0.0,
        "prompt_tokens": statistics.fmean(r.prompt_tokens for r in ok) if ok else 0,
        "errors": len(errors),
        "error_samples": errors[:2],
        "lost": lost,
        "completed": len(ok),
    }


class PlainLoop:
    """The reference: a plain Python loop over llama.cpp's batch API in this process (no HTTP),
    N sequences decoded together, same model, threads and context layout as the server."""

    def __init__(self, args: argparse.Namespace, n_max: int) -> None:
        from workstation.core.catalog import resolve_model_path
        from workstation.core.profile_lookup import load_profile
        from workstation.core.runtime import LoadedModel, RuntimeSettings

        profile = load_profile(args.profile)
        ctx = max(512, args.prompt_words * 3 + args.max_tokens + 64)
        threads = args.threads or profile.resolved_threads()
        self.threads = threads
        from workstation.core.profile_plan import resolve_gpu_layers

        self.model = LoadedModel(
            resolve_model_path(profile.model),
            RuntimeSettings(n_ctx=ctx * n_max, n_threads=threads, n_seq_max=n_max,
                            n_gpu_layers=resolve_gpu_layers(profile)),  # on a GPU, the server's layers
        )

    def tps(self, n: int, args: argparse.Namespace) -> float:
        from workstation.core.profiles import Sampling
        from workstation.core.runtime import Batch
        from workstation.core.sampling import SamplerChain

        m = self.model
        m.clear_memory()
        prompts = [m.tokenize(prompt_for(i + 5000, args.prompt_words)) for i in range(n)]
        batch = Batch(max(m.n_batch, n))
        samplers = [SamplerChain(Sampling(temperature=0.0, repeat_penalty=1.0), m.n_vocab) for _ in range(n)]
        try:
            # each prompt read in n_batch pieces and its first token sampled from its own last
            # piece (not timed): all of them in one batch passed n_batch from 5 clients of ~128
            # tokens, and llama.cpp aborted (GGML_ASSERT n_tokens_all <= n_batch)
            toks = []
            for q, p in enumerate(prompts):
                for start in range(0, len(p), m.n_batch):
                    batch.clear()
                    for j in range(start, min(len(p), start + m.n_batch)):
                        k = batch.add(p[j], j, q, j == len(p) - 1)
                    m.decode(batch)
                toks.append(samplers[q].sample(m.ctx, k))
            pos = [len(p) for p in prompts]
            t0 = time.perf_counter()
            for _ in range(args.max_tokens - 1):
                batch.clear()
                outs = [batch.add(toks[q], pos[q], q, True) for q in range(n)]
                m.decode(batch)
                pos = [x + 1 for x in pos]
                toks = [samplers[q].sample(m.ctx, outs[q]) for q in range(n)]
            return n * (args.max_tokens - 1) / (time.perf_counter() - t0)
        finally:
            for smp in samplers:
                smp.close()
            batch.close()
            m.clear_memory()

    def close(self) -> None:
        self.model.close()


def start_server(args: argparse.Namespace, parallel: int, data_dir: Path | None = None) -> tuple[subprocess.Popen, str]:
    from workstation.core.profile_lookup import load_profile

    profile = load_profile(args.profile)
    data = profile.to_dict()
    data.pop("source", None)
    data["model"] = str(profile.model)
    if args.threads:
        data["threads"] = args.threads
    data["context"] = max(512, args.prompt_words * 3 + args.max_tokens + 64)
    tmp = Path(tempfile.mkdtemp(prefix="ws-load-")) / f"{profile.key}.yaml"
    tmp.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    cmd = [sys.executable, "-m", "workstation.cli", "serve", "-p", str(tmp), "--port", "0",
           "--parallel", str(parallel), "--queue", str(args.flood + parallel if args.two_keys else parallel * 2)]
    env = {**os.environ}
    env.pop("WORKSTATION_API_KEY", None)
    env["WORKSTATION_DATA"] = str(data_dir or tempfile.mkdtemp(prefix="ws-load-data-"))  # never the user's usage
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
    if not m:
        proc.kill()
        raise SystemExit(f"serve did not start: {line}{proc.stderr.read()}")
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    url = f"http://127.0.0.1:{m.group(1)}/v1"
    for _ in range(600):
        try:
            if httpx.get(url.removesuffix("/v1") + "/health", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    return proc, url


def accounting_cost(before: dict[str, float], after: dict[str, float]) -> tuple[float, float, int]:
    """(µs per request on the request path, µs per request in the writer thread, requests)
    between two readings of the server's counters."""
    n = int(after.get("accounting_requests_total", 0) - before.get("accounting_requests_total", 0))
    if n <= 0:
        return 0.0, 0.0, 0
    path = after.get("accounting_seconds_total", 0) - before.get("accounting_seconds_total", 0)
    writer = after.get("accounting_writer_seconds_total", 0) - before.get("accounting_writer_seconds_total", 0)
    return path / n * 1e6, writer / n * 1e6, n


def print_accounting(before: dict[str, float], after: dict[str, float], with_keys: bool) -> dict:
    path_us, writer_us, n = accounting_cost(before, after)
    if n:
        print(f"accounting cost {'with' if with_keys else 'without'} keys: {path_us:.0f} µs per request on the "
              f"request path, {writer_us:.0f} µs per request in the writer thread (audit + usage), over {n} requests")
    else:
        print("accounting cost: not reported by this server")
    return {"with_keys": with_keys, "request_path_us": path_us, "writer_us": writer_us, "requests": n}


def make_keys(data: Path, max_parallel: int | None) -> dict[str, str]:
    """Keys for alice and bob in the server's data folder (the ring the server will read)."""
    from workstation.core.keys import KeyRing

    ring = KeyRing(data / "keys.sqlite3")
    try:
        return {name: ring.add(name, max_parallel=max_parallel)[1] for name in ("alice", "bob")}
    finally:
        ring.close()


def wait_busy(url: str, headers: dict, n: int) -> None:
    """Until the server holds ``n`` requests (processing or waiting)."""
    for _ in range(3000):
        h = httpx.get(url.removesuffix("/v1") + "/health", headers=headers, timeout=10).json()
        if h["slots_processing"] + h["requests_deferred"] >= n:
            return
        time.sleep(0.01)
    raise SystemExit("the flood never reached the server")


def two_keys(args: argparse.Namespace) -> int:
    data = Path(tempfile.mkdtemp(prefix="ws-load-keys-"))
    keys = make_keys(data, args.max_parallel)
    alice = {"Authorization": f"Bearer {keys['alice']}"}
    bob = {"Authorization": f"Bearer {keys['bob']}"}
    proc, url = start_server(args, args.parallel, data)
    try:
        one_request(url, bob, 0, prompt_for(999, 8), 8, threading.Barrier(1))  # warm-up
        before = server_counters(url, bob)
        alone, loaded = [], []
        for r in range(args.rounds):
            res = one_request(url, bob, 1, prompt_for(7000 + r, args.prompt_words), args.bob_tokens, threading.Barrier(1))
            if res.error:
                raise SystemExit(f"bob alone failed: {res.error}")
            alone.append(res.ttft_ms)
            start = threading.Barrier(args.flood)
            flood: list[Result] = []
            firsts = [threading.Event() for _ in range(args.flood)]

            def send(i: int, r: int = r, start: threading.Barrier = start, flood: list[Result] = flood,
                     firsts: list[threading.Event] = firsts) -> None:
                prompt = prompt_for(8000 + 100 * r + i, args.prompt_words)
                flood.append(one_request(url, alice, i, prompt, args.max_tokens, start, firsts[i]))

            threads = [threading.Thread(target=send, args=(i,)) for i in range(args.flood)]
            for t in threads:
                t.start()
            wait_busy(url, bob, args.flood)
            # bob comes once alice's admitted requests are decoding (her long requests are running)
            cap = min(args.flood, args.max_parallel or max(1, args.parallel - 1))
            while sum(e.is_set() for e in firsts) < cap and any(t.is_alive() for t in threads):
                time.sleep(0.005)
            res = one_request(url, bob, 2, prompt_for(9000 + r, args.prompt_words), args.bob_tokens, threading.Barrier(1))
            if res.error:
                raise SystemExit(f"bob under load failed: {res.error}")
            loaded.append(res.ttft_ms)
            for t in threads:
                t.join()
            errors = [x.error for x in flood if x.error]
            if errors:
                raise SystemExit(f"alice's flood failed: {errors[0]}")
        after = server_counters(url, bob)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    a, b = statistics.median(alone), statistics.median(loaded)
    ratio = b / a if a else 0.0
    cap = args.max_parallel or max(1, args.parallel - 1)
    print(f"two keys: --parallel {args.parallel}, {cap} slots at most per key, "
          f"alice floods {args.flood} x {args.max_tokens} tokens, bob asks for {args.bob_tokens}; rounds {args.rounds}")
    print(f"bob's TTFT alone {a:.0f} ms, with alice's flood {b:.0f} ms: {ratio:.2f}x "
          f"(goal within 2x: {'met' if ratio <= 2 else 'NOT met'})")
    cost = print_accounting(before, after, with_keys=True)
    if args.json:
        json.dump({"ttft_alone_ms": alone, "ttft_loaded_ms": loaded, "ratio": ratio, "accounting": cost}, sys.stdout, indent=2)
        print()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-p", "--profile", default="office-cpu")
    ap.add_argument("--clients", default="1,2,4", help="comma-separated client counts")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--prompt-words", type=int, default=90, help="prompt length in words (~128 tokens)")
    ap.add_argument("--rounds", type=int, default=1, help="runs per client count (the median is kept)")
    ap.add_argument("--threads", type=int, help="override the profile's threads")
    ap.add_argument("--url", help="use a running server (…/v1) instead of starting one")
    ap.add_argument("--api-key", default=os.environ.get("WORKSTATION_API_KEY"))
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the plain-loop reference measured after each server level")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--two-keys", action="store_true", help="fairness between two people's keys (issue 19)")
    ap.add_argument("--parallel", type=int, default=4, help="--two-keys: the server's slots")
    ap.add_argument("--max-parallel", type=int, help="--two-keys: slots per key (default: the server's, --parallel - 1)")
    ap.add_argument("--flood", type=int, default=10, help="--two-keys: alice's requests sent at once")
    ap.add_argument("--bob-tokens", type=int, default=16, help="--two-keys: bob's max_tokens")
    args = ap.parse_args()
    if args.two_keys:
        return two_keys(args)
    levels = [int(x) for x in args.clients.split(",") if x.strip()]
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    proc = None
    if args.url:
        url = args.url.rstrip("/")
    else:
        proc, url = start_server(args, max(levels))
    ref = None if args.no_reference else PlainLoop(args, max(levels))
    anchor_bin = None
    if not args.no_reference:
        from anchors import default_bin

        if (default_bin() / "llama-batched-bench").exists():
            anchor_bin = default_bin()
    try:
        one_request(url, headers, 0, prompt_for(999, 8), 8, threading.Barrier(1))  # warm-up
        first = server_counters(url, headers)
        rows = []
        for n in levels:
            before = server_counters(url, headers)
            runs = [run_level(url, headers, n, args, r) for r in range(args.rounds)]
            after = server_counters(url, headers)
            runs.sort(key=lambda row: row["agg_tps"])
            row = runs[len(runs) // 2]
            busy = after.get("busy_seconds_total", 0.0) - before.get("busy_seconds_total", 0.0)
            decode = after.get("decode_seconds_total", 0.0) - before.get("decode_seconds_total", 0.0)
            row["in_decode"] = decode / busy if busy > 0 else 0.0
            # the reference right after, so both see the same machine load
            row["plain_tps"] = ref.tps(n, args) if ref else 0.0
            row["llama_tps"] = 0.0
            if anchor_bin is not None and ref is not None:
                row["llama_tps"] = batched_bench_tps(
                    anchor_bin, ref.model.path, n, ref.threads, max(1, round(row["prompt_tokens"])),
                    args.max_tokens,
                )
            rows.append(row)
        last = server_counters(url, headers)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        if ref is not None:
            ref.close()
    base = rows[0]["agg_tps"] if rows and rows[0]["clients"] == 1 else 0.0
    for row in rows:
        row["speedup"] = row["agg_tps"] / base if base else 0.0
        row["fair"] = row["client_min_tps"] >= 0.5 * row["client_mean_tps"] if row["client_mean_tps"] else False
    if args.json:
        path_us, writer_us, n = accounting_cost(first, last)
        accounting = {"with_keys": bool(args.api_key), "request_path_us": path_us, "writer_us": writer_us, "requests": n}
        json.dump({"max_tokens": args.max_tokens, "rows": rows, "accounting": accounting}, sys.stdout, indent=2)
        print()
        return 0
    print(f"workstation serve load test: {args.profile}, prompt ~{rows[0]['prompt_tokens']:.0f} tokens, "
          f"{args.max_tokens} generated per client (ignore_eos), rounds {args.rounds}")
    head = (f"{'clients':>7} {'TTFT p50':>9} {'TTFT p95':>9} {'agg tok/s':>9} {'x1':>5} "
            f"{'e2e tok/s':>9} {'client min/mean':>15} {'fair':>4} {'errors':>6} {'lost':>4} "
            f"{'plain loop':>10} {'srv/plain':>9} {'llama.cpp':>9} {'in decode':>9}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['clients']:>7} {r['ttft_p50_ms']:>7.0f}ms {r['ttft_p95_ms']:>7.0f}ms {r['agg_tps']:>9.1f} "
              f"{r['speedup']:>4.2f}x {r['e2e_tps']:>9.1f} {r['client_min_tps']:>7.1f}/{r['client_mean_tps']:<7.1f} "
              f"{'yes' if r['fair'] else 'NO':>4} {r['errors']:>6} {r['lost']:>4} "
              f"{r['plain_tps']:>10.1f} {r['agg_tps'] / r['plain_tps'] if r['plain_tps'] else 0:>8.2f}x "
              f"{r['llama_tps']:>9.1f} {r['in_decode'] * 100:>8.1f}%")
        for e in r["error_samples"]:
            print(f"        error: {e}")
    at4 = next((r for r in rows if r["clients"] == 4), None)
    if at4 and base:
        verdict = "met" if at4["speedup"] >= 1.6 and at4["fair"] else "NOT met"
        print(f"goal (4 clients >= 1.6x one client, no client below half the mean): {verdict} "
              f"({at4['speedup']:.2f}x)")
        one = rows[0]
        plain = at4["plain_tps"] / one["plain_tps"] if one["plain_tps"] else 0.0
        llama = at4["llama_tps"] / one["llama_tps"] if one["llama_tps"] else 0.0
        print(f"4 clients over 1 in this run: server {at4['speedup']:.2f}x, plain loop {plain:.2f}x, "
              f"llama-batched-bench {llama:.2f}x" + ("" if one["llama_tps"] else " (binary not found)"))
    print("anchors (2-core dev machine): llama-batched-bench 73/96/117/122 tok/s at 1/2/4/8; "
          "plain Python loop 77/108/135/149")
    print_accounting(first, last, with_keys=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
