"""``workstation hw [--json]``: CPU, RAM and GPUs now."""

from __future__ import annotations

import argparse

from workstation.commands import add_lang_arg, print_json, texts_of
from workstation.core import hardware
from workstation.core.catalog import human_bytes


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hw", help="this PC's CPU, memory and GPUs now")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_lang_arg(p)  # (it was English on a Turkish PC)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rep = hardware.report()
    # what a memory limit (ulimit -v, a container's cgroup) leaves this program: the machine's
    # free memory alone said 22 GB under a 2 GB limit, where fit plans with the limit's room
    limit = hardware.memory_left_under_limits()
    if args.json:
        print_json({**rep.to_dict(), "memory_limit_left": limit})
        return 0
    t = texts_of(args)
    c, m = rep.cpu, rep.memory
    print(t("hw_cmd.cpu", model=c.model, cores=c.physical_cores, threads=c.logical_cores, arch=c.architecture))
    print(t("hw_cmd.features", flags=" ".join(c.flags)) if c.flags else t("hw_cmd.no_features"))
    print(t("hw_cmd.memory", free=human_bytes(m.available), total=human_bytes(m.total))
          + (t("hw_cmd.memory_limit", left=human_bytes(limit)) if limit is not None else "")
          + t("hw_cmd.bandwidth", bw=f"{rep.cpu_bandwidth_gbps:.0f} GB/s"))
    if not rep.gpus:
        print(t("hw_cmd.no_gpus"))
    for g in rep.gpus:
        extra = []
        if g.util_percent is not None:
            extra.append(t("hw_cmd.busy", share=f"{g.util_percent:.0f}%"))
        if g.temperature_c is not None:
            extra.append(t.number(f"{g.temperature_c:.0f} °C"))
        if g.power_w is not None:
            extra.append(t("hw_cmd.power_of", w=f"{g.power_w:.0f} W", limit=f"{g.power_limit_w:.0f} W")
                         if g.power_limit_w else t.number(f"{g.power_w:.0f} W"))
        print(t("hw_cmd.gpu", index=g.index, name=g.name, free=human_bytes(g.vram_free), total=human_bytes(g.vram_total))
              + (f"; {', '.join(extra)}" if extra else "")
              + (f"; ~{t.number(f'{g.bandwidth_gbps:.0f} GB/s')}" if g.bandwidth_gbps else ""))
    return 0
