"""bench/load.py's reference, the plain loop it measures the server against."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import make_profile, write_profile_file

ROOT = Path(__file__).resolve().parent.parent


def test_the_plain_loop_reads_more_prompts_than_one_batch_holds(tmp_path: Path, smollm2_path: Path) -> None:
    """It put every client's prompt in one batch: 16 clients of ~128 tokens (the GPU check's
    serve_scaling) passed the 512-token batch, llama.cpp aborted, and the GPU check's step ran
    out of time instead of measuring. Six clients of ~128 tokens here."""
    profile = write_profile_file(tmp_path / "load.yaml", make_profile(context=1024, threads=1), model=str(smollm2_path))
    code = (
        "import argparse, sys\n"
        "sys.path.insert(0, 'bench')\n"
        "from load import PlainLoop\n"
        f"args = argparse.Namespace(profile={str(profile)!r}, prompt_words=90, max_tokens=3, threads=1)\n"
        "loop = PlainLoop(args, 6)\n"
        "print(loop.tps(6, args) > 0, loop.model.n_batch)\n"
        "loop.close()\n"
    )
    env = {**os.environ, "GGML_NO_BACKTRACE": "1", "PYTHONPATH": str(ROOT)}  # (an abort: no debugger attached)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "512"]
