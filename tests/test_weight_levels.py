"""A Q8_0 or F16 made from a 4-bit file is told from one quantized from the original model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import kld_profile_file, requantized_copy
from docmaker import english_text
from tui_helpers import workers_done

from workstation.cli import main
from workstation.core.gguf_check import TensorEntry
from workstation.core.weight_levels import coarse, weight_levels


def _q8_0_blocks(weights: np.ndarray) -> bytes:
    """``weights`` (blocks of 32) as llama.cpp's Q8_0 writes them: an f16 scale, 32 int8."""
    out = bytearray()
    for block in weights.reshape(-1, 32):
        d = float(np.abs(block).max()) / 127 or 1.0
        out += np.float16(d).tobytes() + np.round(block / d).astype(np.int8).tobytes()
    return bytes(out)


@pytest.mark.parametrize("four_bit", [False, True])
def test_blocks_of_at_most_16_values_are_a_4_bit_files(four_bit: bool) -> None:
    """Weights quantized to Q8_0 from the original take 25-32 values a block; from a 4-bit
    copy (each block's 16 levels between its min and max, as Q4_1 keeps them), 16 at most."""
    rng = np.random.default_rng(7)
    weights = rng.normal(0, 0.02, (64, 32)).astype(np.float32)
    if four_bit:
        low, high = weights.min(axis=1, keepdims=True), weights.max(axis=1, keepdims=True)
        step = (high - low) / 15
        weights = low + np.round((weights - low) / step) * step
    data = np.frombuffer(_q8_0_blocks(weights), dtype=np.uint8)
    tensor = TensorEntry("blk.0.ffn_up.weight", (32, 64), 8, 0, len(data), 0)
    assert coarse(data, 0, tensor) is four_bit


def test_a_q8_0_made_from_q4_1_is_said_so(smollm2_path: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """README's recipe makes a Q8_0 of SmolLM2's Q4_1; inspect and eval --kld say it is no
    better a reference than the Q4_1 (against it Q4_1 "lost practically nothing")."""
    q8_0 = requantized_copy(smollm2_path, "Q8_0")
    assert weight_levels(q8_0).from_four_bits
    assert weight_levels(smollm2_path).sampled == 0  # a 4-bit file itself: nothing to say
    assert main(["models", "inspect", str(q8_0), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["from_four_bits"] is True
    assert main(["models", "inspect", str(smollm2_path)]) == 0
    assert "4-bit" not in capsys.readouterr().out

    doc = tmp_path / "memo.txt"
    doc.write_text(english_text(), encoding="utf-8")
    ref, cand = kld_profile_file(tmp_path, "q8", q8_0), kld_profile_file(tmp_path, "q4_1", smollm2_path)
    assert main(["eval", "-p", str(ref), "-p", str(cand), "--kld", str(doc), "--ctx", "64", "--chunks", "1",
                 "--no-save"]) == 0
    out = capsys.readouterr().out
    assert "Note: q8 is not a good yardstick: q8 holds no more than a 4-bit file, though its file type says more" in out
    assert "a file downloaded at Q8_0 or F16 is a good yardstick" in out
    # said before what it sways (it came after "Which to pick"), and what it means for the reader
    assert out.index("Note: q8 is not a good yardstick") < out.index("In plain words") < out.index("Which to pick"), out
    assert "the comparison may understate the loss" in out


async def test_f12_says_a_reference_made_from_4_bits_as_eval_does(
        smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """eval --kld said under its table that its Q8_0 reference holds no more than a 4-bit file;
    F12 showed the same run as "reference … 100.0%" and said nothing."""
    from textual.widgets import Static

    from workstation.tui.app import WorkstationApp
    from workstation.tui.screens.quantization import QuantizationScreen

    doc = tmp_path / "memo.txt"
    doc.write_text(english_text(), encoding="utf-8")
    folder = tmp_path / "profiles"
    folder.mkdir()
    ref = kld_profile_file(folder, "q8", requantized_copy(smollm2_path, "Q8_0"))
    cand = kld_profile_file(folder, "q4_1", smollm2_path)
    monkeypatch.setenv("WORKSTATION_PROFILES", str(folder))

    async def legend(language: str) -> str:
        app = WorkstationApp("q4_1", start_engine=False, sample_system=False, language=language)
        async with app.run_test(size=(140, 30)) as pilot:
            await pilot.press("f12")
            await workers_done(pilot)
            await pilot.pause()
            assert isinstance(app.screen, QuantizationScreen)
            return str(app.screen.query_one("#quality-legend", Static).render())

    assert main(["eval", "-p", str(cand), "-p", str(ref), "--kld", str(doc), "--ctx", "64", "--chunks", "1",
                 "--reference", str(cand)]) == 0
    shown = await legend("en")
    assert shown.startswith("KL divergence:") and "4-bit" not in shown  # a 4-bit reference: nothing to say
    assert main(["eval", "-p", str(ref), "-p", str(cand), "--kld", str(doc), "--ctx", "64", "--chunks", "1"]) == 0
    capsys.readouterr()
    said = await legend("en")
    assert "Note: q8 is not a good yardstick: q8 holds no more than a 4-bit file, though its file type says more" in said, said
    assert "a file downloaded at Q8_0 or F16 is a good yardstick" in said
    assert "Not: q8 iyi bir ölçüt değil: q8, dosya türü daha fazlasını söylese de" in await legend("tr")
