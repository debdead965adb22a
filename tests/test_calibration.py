"""``size --measure``: this machine's decode speed at 1, 2 and 4 slots for both packaged
models, and the speed model fitted to it (each figure's error printed with that figure left
out of the fit). Real models, real llama.cpp; nothing here asserts a time."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from workstation.cli import main
from workstation.core import calibration
from workstation.core.installed_models import installed_name


@pytest.mark.timeout(600)  # 2 loads, 18 contexts and 6 decode runs on a busy machine
def test_size_measure_on_the_command_line(smollm2_path: Path, gemma_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_cpp import _internals

    loaded: list[str] = []

    class CountedModel(_internals.LlamaModel):  # llama.cpp's own load, counted
        def __init__(self, *, path_model: str, **kwargs: Any) -> None:
            loaded.append(path_model)
            super().__init__(path_model=path_model, **kwargs)

    monkeypatch.setattr(_internals, "LlamaModel", CountedModel)
    # 6 tokens a decode run, not 24: the same runs, loads and fit, a quarter of the decoding
    # (24 cost 14 s of CPU here; how long a run is, nothing below reads)
    monkeypatch.setattr(calibration.measure, "__kwdefaults__", {**calibration.measure.__kwdefaults__, "n_gen": 6})
    # one thread: two spin waiting for each other on a machine whose 2 cores others share
    assert main(["size", "--measure", "--threads", "1", "--json"]) == 0
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
    # the memory checks: 2 models x 3 contexts x 3 K/V types, plus the two speed loads, each
    # model's weights loaded once (loaded again for each of the 9, the test took a quarter more CPU)
    assert data["memory_estimates_here"]["loads"] == 2 * 9 + 2
    assert sorted(loaded) == sorted(map(str, (smollm2_path, gemma_path)))
    # what was measured is this machine's speed model from now on (one measuring run serves
    # both checks: the same figures through the API cost 20 s more on a slow machine)
    speed, report = calibration.this_machine()
    assert report["measured_here"]  # (fitted, unless a busy moment made its figures disagree: said, not gone by)
    assert report["source"].startswith("fitted to 6 decode figures") or report["too_noisy"], report["source"]
    for c in report["checks"]:
        assert math.isfinite(c["error_pct"]) and c["predicted_tps"] > 0
    assert sorted((c["model"], c["slots"]) for c in report["checks"]) == sorted(
        (installed_name(p), b) for p in (smollm2_path, gemma_path) for b in calibration.SLOTS)
    # more sequences decode more tokens per step in total, by the fitted model too
    agg = [speed.decode_tps(1e8, 30, 1.3e8, b) * b for b in (1, 2, 4)]
    assert agg == sorted(agg)


def test_figures_too_unsteady_to_fit_are_not_gone_by(smollm2_path: Path, gemma_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A size --measure on a busy machine (its figures predicted 36% off one another) made every
    estimate after it: fit said "about 46 tokens/s (from this PC's own measurements)" beside
    bench's 125, and F4 called the same 46 "a reference PC scaled to this one". Figures that
    disagree so much are said, and the estimates keep to the reference PC until measured again."""
    from workstation.core.model_info import read_model_info
    from workstation.core.results import ResultRow, save_run
    from workstation.core.speed_model import default_cpu

    quiet = default_cpu(2, 20.0)

    def figures(factors: list[float]) -> None:
        rows, factor = [], iter(factors)
        for path in (smollm2_path, gemma_path):
            w, n_layer, act = calibration.cpu_cost(read_model_info(path, check=False))
            for b in calibration.SLOTS:
                tps = quiet.decode_tps(w, n_layer, act, b) * b * next(factor)
                rows.append(ResultRow(installed_name(path), f"tg24x{b}", tps, "tok/s", str(path), {"n_seq": b}))
        save_run("calibrate", rows, "size --measure")

    from workstation.tui.i18n import Texts
    from workstation.tui.integrations import installed_models, model_fit

    en = Texts("en")
    row = next(r for r in installed_models(en) if r.path and Path(r.path).resolve() == smollm2_path.resolve())
    figures([1.0, 1.02, 0.98, 1.0, 0.99, 1.01])  # a quiet PC: its figures agree
    _, report = calibration.this_machine()
    assert report["source"].startswith("fitted to 6") and not report["too_noisy"], report
    assert calibration.measured_cpu() is not None
    assert "(an estimate from this PC's own measurements). 'workstation bench' measures it on this PC" in model_fit(row, en)
    figures([1.0, 0.3, 1.0, 2.5, 0.5, 1.8])  # a busy moment
    _, report = calibration.this_machine()
    assert report["too_noisy"] and report["mean_abs_error_pct"] > calibration.NOISY_PCT
    assert "disagree too much to go by" in report["source"] and "when the PC is quiet" in report["source"]
    # the figure said as the estimate, and when to measure again said once (it said "run 'size
    # --measure' to measure this one" in the same breath as "size --measure again while idle")
    assert main(["size", "--people", "12"]) in (0, 2)
    out = capsys.readouterr().out
    assert "This machine's speed: an estimate, not a measurement (" in out and out.count("size --measure") == 1, out
    assert "to measure this one" not in out
    assert calibration.measured_cpu() is None  # fit, F4 and size go by the reference PC again
    assert main(["fit", "-p", "office-cpu"]) == 0
    assert "(an estimate from a reference PC scaled to this one's cores and memory speed)" in capsys.readouterr().out
    assert "(an estimate from a reference PC scaled to this one's cores and memory speed" in model_fit(row, en)


def test_size_says_what_its_speeds_go_by_and_the_measure_table_in_turkish(
        smollm2_path: Path, gemma_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'size --lang tr' said "This machine's speed: not measured here: figures of a 2-core
    reference PC…" and --measure's table "model  slots  measured tok/s  predicted (left out)
    error … mean error" in English on a Turkish screen: they are said in its language, numbers
    as it writes them; English and --json as they were."""
    from workstation.commands.size import format_calibration
    from workstation.core.model_info import read_model_info
    from workstation.core.results import ResultRow, save_run
    from workstation.core.speed_model import default_cpu
    from workstation.tui.i18n import Texts

    assert main(["size", "--people", "6", "--lang", "tr"]) in (0, 2)
    out = capsys.readouterr().out
    assert "Bu makinenin hızı: burada ölçülmedi: " in out and "This machine's speed" not in out, out
    assert "not measured here" not in out and "reference PC" not in out
    quiet = default_cpu(2, 20.0)
    rows = []
    for path, factors in ((smollm2_path, (1.0, 1.02, 0.98)), (gemma_path, (1.0, 0.99, 1.01))):
        w, n_layer, act = calibration.cpu_cost(read_model_info(path, check=False))
        rows += [ResultRow(installed_name(path), f"tg24x{b}", quiet.decode_tps(w, n_layer, act, b) * b * f, "tok/s",
                           str(path), {"n_seq": b}) for b, f in zip(calibration.SLOTS, factors, strict=True)]
    save_run("calibrate", rows, "size --measure")
    _, cal = calibration.this_machine()
    english = format_calibration(cal)
    assert english.startswith("This machine's speed model: fitted to 6 decode figures measured here (")
    assert "model                          slots  measured tok/s  predicted (left out)  error" in english
    assert "\nmean error " in english
    turkish = format_calibration(cal, lookup=Texts("tr").get)
    assert turkish.startswith("Bu makinenin hız modeli: burada ölçülen 6 yazma hızı sonucuna uydurulmuş ("), turkish
    assert "ölçülen token/sn" in turkish and "tahmin (onsuz)" in turkish and "\nortalama sapma %" in turkish
    for english_words in ("measured", "predicted", "mean error", "fitted to", "speed model"):
        assert english_words not in turkish, english_words
    assert main(["size", "--people", "6", "--lang", "tr"]) in (0, 2)
    out = capsys.readouterr().out
    assert "Bu makinenin hızı: burada ölçülen 6 yazma hızı sonucuna uydurulmuş (" in out
    assert "; burada ortalama %" in out and "off by" not in out and "fitted to" not in out, out
    assert main(["size", "--people", "6", "--json", "--lang", "tr"]) in (0, 2)
    said = json.loads(capsys.readouterr().out)["calibration"]
    assert said["source"].startswith("fitted to 6 decode figures") and "source_said" not in said
