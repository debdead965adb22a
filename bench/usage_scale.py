"""How fast ``workstation usage`` answers over a large usage file (issue 19: 100,000 recorded
requests in under a second).

Fills a fresh data folder with ``--rows`` requests (20 people, 3 profiles, 60 days), then times
``workstation usage --by person|profile|day`` as a user runs it (a new process: start-up
included) and the summary query alone.

    .venv/bin/python bench/usage_scale.py --rows 100000
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()
    from workstation.core.usage import UsageLog, UsageRecord

    data = Path(tempfile.mkdtemp(prefix="ws-usage-scale-"))
    log = UsageLog(data / "usage.sqlite3")
    rng = random.Random(1)
    now = time.time()
    t0 = time.perf_counter()
    batch: list[UsageRecord] = []
    for i in range(args.rows):
        batch.append(UsageRecord(
            t=now - rng.random() * 60 * 86400, key=f"person{rng.randrange(20):02d}",
            profile=("office-cpu", "office-gpu", "big")[rng.randrange(3)], route="chat",
            prompt_tokens=rng.randrange(20, 2000), cached_tokens=rng.randrange(0, 20),
            completion_tokens=rng.randrange(1, 800), ttft_ms=rng.random() * 900, decode_tps=rng.random() * 80,
            status=200 if rng.random() > 0.02 else 429, duration_ms=rng.random() * 20000, client="10.0.0.7",
            audit_seq=i + 1,
        ))
        if len(batch) == 5000:
            log.add(batch)
            batch = []
    log.add(batch)
    fill = time.perf_counter() - t0
    print(f"{args.rows:,} rows written in {fill:.1f} s ({fill / args.rows * 1e6:.0f} µs per row in batches of 5000)")
    for by in ("person", "profile", "day"):
        t0 = time.perf_counter()
        log.summary(by)
        query = time.perf_counter() - t0
        env = {**os.environ, "WORKSTATION_DATA": str(data)}
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "workstation.cli", "usage", "--by", by], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        command = time.perf_counter() - t0
        print(f"usage --by {by:<8} query {query * 1000:6.0f} ms, whole command {command * 1000:6.0f} ms "
              f"({len(out.splitlines()) - 3} rows) — goal under 1 s: {'met' if command < 1 else 'NOT met'}")
    log.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
