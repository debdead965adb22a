"""``workstation hw [--json]``: CPU, RAM and GPUs now."""

from __future__ import annotations

import argparse

from workstation.commands import print_json
from workstation.core import hardware
from workstation.core.catalog import human_bytes


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hw", help="this PC's CPU, memory and GPUs now")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rep = hardware.report()
    # what a memory limit (ulimit -v, a container's cgroup) leaves this program: the machine's
    # free memory alone said 22 GB under a 2 GB limit, where fit plans with the limit's room
    limit = hardware.memory_left_under_limits()
    if args.json:
        print_json({**rep.to_dict(), "memory_limit_left": limit})
        return 0
    c, m = rep.cpu, rep.memory
    print(f"CPU:    {c.model} ({c.physical_cores} cores, {c.logical_cores} threads, {c.architecture})")
    print(f"        features: {' '.join(c.flags) or 'none detected'}")
    print(f"Memory: {human_bytes(m.available)} free of {human_bytes(m.total)}"
          + (f" (a memory limit leaves this program {human_bytes(limit)})" if limit is not None else "")
          + f"; decode bandwidth about {rep.cpu_bandwidth_gbps:.0f} GB/s (estimate)")
    if not rep.gpus:
        print("GPUs:   none found (no NVIDIA GPU or driver); models run on the CPU")
    for g in rep.gpus:
        extra = []
        if g.util_percent is not None:
            extra.append(f"{g.util_percent:.0f}% busy")
        if g.temperature_c is not None:
            extra.append(f"{g.temperature_c:.0f} °C")
        if g.power_w is not None:
            extra.append(f"{g.power_w:.0f} W" + (f" of {g.power_limit_w:.0f} W" if g.power_limit_w else ""))
        print(f"GPU {g.index}:  {g.name}: {human_bytes(g.vram_free)} free of {human_bytes(g.vram_total)} VRAM"
              + (f"; {', '.join(extra)}" if extra else "")
              + (f"; ~{g.bandwidth_gbps:.0f} GB/s" if g.bandwidth_gbps else ""))
    return 0
