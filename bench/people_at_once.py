"""People at once on this CPU: ``serve``'s per-person speed, the sizing estimate's and
llama.cpp's own, side by side, as ratios over one person alone, in one run.

For each client count (1 and 4 by default) every client sends one streamed request at the same
moment (bench/load.py's ``run_level``: ~``--prompt-words`` prompt, exactly ``--max-tokens``
tokens); its per-person decode speed is the clients' mean tokens/s. Beside it:

  estimate      what ``size`` says a person gets with N decoding together on this CPU
                (speed_model's constants as ``size`` uses them: measured here, else the
                reference PC's), at the cells these requests fill
  llama.cpp     llama-batched-bench's per-sequence decode speed (S_TG / N) for N sequences of
                128 + ``--max-tokens`` tokens, run right after serve, so both see the same load

The machine may be shared: read the ratios (N at once over 1), not the absolute figures.
On the 2-core development PC (SmolLM2 Q4_1, 2 threads, shared with other programs), per-person
speed at 4 at once over 1 alone: serve 0.42 and 0.41 (two runs: 100 and 99 tok/s alone, 42 and
41 each with 4), the estimate 0.43, an IT person's serve figures 0.40 (12 over 30), llama.cpp's
quiet-run anchors 0.40 (bench/load.py: 73 and 117 tok/s in all). llama-batched-bench run while
other programs kept both cores busy gave 0.26 to 4.6: its two threads wait on each other, so
run it on a quiet PC. Not run in tests.

    .venv/bin/python bench/people_at_once.py -p office-cpu --clients 1,4 --max-tokens 64
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from anchors import default_bin  # noqa: E402
from load import batched_bench_tps, run_level, start_server  # noqa: E402

from workstation.core.calibration import this_machine  # noqa: E402
from workstation.core.catalog import resolve_model_path  # noqa: E402
from workstation.core.model_info import read_model_info  # noqa: E402
from workstation.core.model_shapes import active_params  # noqa: E402
from workstation.core.planner import plan  # noqa: E402
from workstation.core.profile_lookup import load_profile  # noqa: E402


def estimate(model: Path, n: int, cells: float) -> float:
    """The sizing estimate's tokens/s of one person with ``n`` decoding together on this CPU."""
    info = read_model_info(model)
    p = plan(info, context=4096, gpu_layers=0, gpus=[], ram_available=2**40, ram_total=2**40, hint=False)
    speed, _ = this_machine()
    kv_read = p.kv_cache_bytes / max(1, p.kv_cells) * cells
    return speed.decode_tps(p.decode_bytes_per_token, info.n_layer, active_params(info), n, kv_read)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-p", "--profile", default="office-cpu")
    ap.add_argument("--clients", default="1,4", help="comma-separated client counts (the first is the base)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-words", type=int, default=90, help="prompt length in words (~128 tokens)")
    ap.add_argument("--threads", type=int, help="override the profile's threads")
    ap.add_argument("--no-llama", action="store_true", help="skip llama-batched-bench")
    args = ap.parse_args()
    args.flood, args.two_keys = 0, False  # (start_server reads them)
    levels = [int(x) for x in args.clients.split(",") if x.strip()]
    profile = load_profile(args.profile)
    model = Path(resolve_model_path(profile.model))
    threads = args.threads or profile.resolved_threads()
    proc, url = start_server(args, max(levels))
    rows = []
    try:
        for n in levels:
            row = run_level(url, {}, n, args, 0)
            rows.append({"n": n, "serve": row["client_mean_tps"], "prompt": row["prompt_tokens"],
                         "ttft_max_s": row["ttft_p95_ms"] / 1000})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    bin_dir = default_bin()
    for r in rows:
        r["estimate"] = estimate(model, r["n"], r["prompt"] + args.max_tokens / 2)
        r["llama"] = 0.0
        if not args.no_llama and (bin_dir / "llama-batched-bench").exists():
            r["llama"] = batched_bench_tps(bin_dir, model, r["n"], threads, 128, args.max_tokens) / r["n"]
    base = rows[0]
    print(f"{'at once':>8}  {'serve tok/s':>11} {'ratio':>6}  {'estimate':>8} {'ratio':>6}  "
          f"{'llama.cpp':>9} {'ratio':>6}  {'last first word':>15}")
    for r in rows:
        def ratio(k: str, r: dict = r) -> str:
            return f"{r[k] / base[k]:.2f}" if base[k] else "-"
        print(f"{r['n']:>8}  {r['serve']:>11.1f} {ratio('serve'):>6}  {r['estimate']:>8.1f} {ratio('estimate'):>6}  "
              f"{r['llama']:>9.1f} {ratio('llama'):>6}  {r['ttft_max_s']:>13.1f} s")
    print("Ratios: per-person speed with N at once over one alone (the machine may be shared: compare these).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
