"""``size --measure``: this machine's decode speed at 1, 2 and 4 slots for both packaged
models, and the speed model fitted to it (each figure's error printed with that figure left
out of the fit). Real models, real llama.cpp; nothing here asserts a time."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from workstation.cli import main
from workstation.core import calibration
from workstation.core.catalog import installed_name


@pytest.mark.timeout(600)  # 20 loads and 6 decode runs on a busy machine
def test_size_measure_on_the_command_line(smollm2_path: Path, gemma_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["size", "--measure", "--threads", "2", "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert len(data["calibration"]["checks"]) == 6
    with capsys.disabled():
        for c in data["calibration"]["checks"]:
            print(f"{c['model']:<32} {c['slots']} slots: measured {c['measured_tps']:7.1f} tok/s, "
                  f"predicted {c['predicted_tps']:7.1f} (fit without it), error {c['error_pct']:+.1f}%")
    assert "ETA" in captured.err and "100%" in captured.err  # the progress bar, line by line off a terminal
    fractions = [int(m) for m in re.findall(r"\] +(\d+)%", captured.err)]
    assert fractions == sorted(fractions) and fractions[-1] == 100
    assert "decode x4" in captured.err and "gemma" in captured.err
    # the memory loads: 2 models x 3 contexts x 3 K/V types, plus the two speed loads
    assert data["memory_estimates_here"]["loads"] == 2 * 9 + 2
    # what was measured is this machine's speed model from now on (one measuring run serves
    # both checks: the same figures through the API cost 20 s more on a slow machine)
    speed, report = calibration.this_machine()
    assert report["measured_here"] and report["source"].startswith("fitted to 6 decode figures")
    for c in report["checks"]:
        assert math.isfinite(c["error_pct"]) and c["predicted_tps"] > 0
    assert sorted((c["model"], c["slots"]) for c in report["checks"]) == sorted(
        (installed_name(p), b) for p in (smollm2_path, gemma_path) for b in calibration.SLOTS)
    # more sequences decode more tokens per step in total, by the fitted model too
    agg = [speed.decode_tps(1e8, 30, 1.3e8, b) * b for b in (1, 2, 4)]
    assert agg == sorted(agg)
