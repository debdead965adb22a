"""scripts/gpu-check: the GPU check kit (issue 21). See README, "GPU check".

    scripts/gpu-check prepare [--models A,B] [--skip-build]   here: make .gpu-check/ and build it for the CPU
    scripts/gpu-check plan                                    the device calls to make, one JSON line each
    scripts/gpu-check run [--local] [--quick]                 on the device (each call); --local: dry run here
    scripts/gpu-check run --now --steps environment,engine_load,bench
                                                              after call 2: a short check (a crash, the reference)
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "prepare":
        from .prepare import main as prepare

        return prepare(rest)
    if cmd == "plan":
        from .kit import CORE, MANIFEST, Manifest, carried_bytes, device_calls

        if not (CORE / MANIFEST).exists():
            print("gpu-check: no kit yet; run 'scripts/gpu-check prepare' first.", file=sys.stderr)
            return 1
        manifest = Manifest.read(CORE / MANIFEST)
        for call in device_calls(manifest):
            call["carries_mib"] = round((carried_bytes(manifest, call["call"]) + manifest.tree_bytes) / 2**20, 1)
            print(json.dumps(call))
        return 0
    if cmd == "run":
        from .device import main as run

        return run(rest)
    if cmd == "build-worker":
        from .device import build_worker

        return build_worker(rest)
    print(f"gpu-check: unknown command '{cmd}'; use prepare, plan or run.", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
