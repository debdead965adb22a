"""``workstation fit [-p PROFILE] [--json]``: will the profile's model fit, and where."""

from __future__ import annotations

import argparse

from workstation.commands import add_profile_arg, print_json, profile_ref
from workstation.core.planner import human_bytes, plan_for_profile
from workstation.core.profiles import load_profile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fit", help="will the model fit: GPU layers, memory, expected speed")
    add_profile_arg(p)
    p.add_argument("--context", type=int, help="plan for this context instead of the profile's")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    profile = load_profile(profile_ref(args))
    if args.context:
        profile.context = args.context
    if profile.backend != "llama":
        msg = f"profile '{profile.key}' runs on a remote server ({profile.remote.base_url}); nothing loads here"
        if args.json:
            print_json({"profile": profile.key, "remote": True, "fits": True, "verdict": msg,
                        "weights_bytes": 0, "kv_cache_bytes": 0, "gpu_layers": 0, "total_layers": 0})
        else:
            print(msg)
        return 0
    plan = plan_for_profile(profile)
    if args.json:
        print_json({"profile": profile.key, **plan.to_dict()})
        return 0 if plan.fits else 2
    print(f"{profile.key}: {plan.model} ({plan.architecture}, {plan.file_type}), context {plan.context:,}, "
          f"K/V {plan.type_k}/{plan.type_v}")
    print(f"  verdict:   {plan.verdict}")
    print(f"  weights:   {human_bytes(plan.weights_bytes)}")
    swa = f", sliding-window layers {plan.swa_cells:,} cells" if plan.swa_cells != plan.kv_cells else ""
    print(f"  KV cache:  {human_bytes(plan.kv_cache_bytes)} ({plan.kv_cells:,} cells{swa})")
    print(f"  compute:   {human_bytes(plan.compute_bytes)} (estimate)")
    print(f"  GPU layers: {plan.gpu_layers} of {plan.total_layers} (gpu_layers: {plan.requested_gpu_layers})")
    for d in plan.devices:
        if d.kind == "gpu" or d.need_bytes:
            print(f"    {d.name:<24} {d.layers:>3} layers  needs {human_bytes(d.need_bytes):>9}  "
                  f"free {human_bytes(d.free_bytes):>9}")
    print(f"  speed:     {plan.speed_note}")
    for note in plan.notes:
        print(f"  note:      {note}")
    return 0 if plan.fits else 2
