"""Quantization loss as KL divergence: a requantized copy of the packaged SmolLM2 against the
original, checked against an independent full-vocabulary numpy computation; the reference
cache; vocabulary refusal; documents through the readers; the offer after `models quantize`."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import kld_profile_file, make_profile, requantized_copy
from docmaker import english_text, make_docx
from llama_reference import scored_positions, window_log_probs
from tui_helpers import workers_done

from workstation.cli import main
from workstation.commands.eval import ReferenceRow
from workstation.core.catalog import file_size_text
from workstation.core.engine import Engine
from workstation.core.invocation import shell_word
from workstation.core.kld import (
    RETIME_WINDOWS,
    KLDResult,
    ReferenceLogits,
    VocabularyMismatch,
    build_reference,
    check_same_vocabulary,
    compare_to_reference,
    key_path,
    load_reference,
    reference_key,
    time_reference,
)
from workstation.core.results import history

WINDOW = 128
KV = ("f16", "f16")


TURKISH = (
    "Toplantı salı günü saat onda başlayacak. Lütfen raporlarınızı pazartesi akşamına kadar "
    "paylaşılan klasöre yükleyin. Bütçe tablosunda geçen yılın harcamaları ile bu yılın planı "
    "yan yana gösterilmeli; farklar yüzde beşi aşıyorsa kısa bir açıklama ekleyin. İstanbul "
    "ofisindeki arkadaşlarımız görüntülü bağlantıyla katılacak, bu yüzden sunumları önceden "
    "gönderin. Müşteri sözleşmelerinin yenilenme tarihleri ayrı bir listede toplanacak ve "
    "hukuk birimi her maddeyi tek tek kontrol edecek. Öğle yemeği şirket tarafından karşılanacak. "
) * 3


@pytest.fixture(scope="module")
def q4_0_path(smollm2_path: Path) -> Path:
    """The packaged Q4_1 model requantized to Q4_0 (a real, visible loss)."""
    return requantized_copy(smollm2_path, "q4_0")


def _engine(model: Path) -> Engine:
    return Engine(make_profile(model=model, threads=1, context=256))


@pytest.fixture(scope="module")
def reference(smollm2_path: Path) -> Iterator[Engine]:
    eng = _engine(smollm2_path)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def candidate(q4_0_path: Path) -> Iterator[Engine]:
    eng = _engine(q4_0_path)
    yield eng
    eng.close()


def _english_key(model: Path) -> dict:
    """The key of the reference pass over ``english_text()``: 3 windows of ``WINDOW``, top 512."""
    return reference_key(model, KV, english_text(), WINDOW, 3, 512)


@pytest.fixture(scope="module")
def english_reference(reference: Engine, smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> ReferenceLogits:
    """The reference pass over ``english_text()``, built once for the tests that read it (each
    built its own, of 1 to 3 windows)."""
    return build_reference(reference.model, english_text(), _english_key(smollm2_path),
                           tmp_path_factory.mktemp("kldref"))


def _full_vocabulary_kld(
    ref_path: Path, cand_path: Path, text: str, n_ctx: int, n_chunks: int, flash_attn: bool
) -> dict[str, float]:
    """The same figures written out independently (tests/llama_reference.py: llama-cpp-python's
    high-level ``Llama`` for both models), the KLD summed over the whole vocabulary."""
    tokens, ref_windows = window_log_probs(ref_path, text, n_ctx, n_chunks, flash_attn)
    _, cand_windows = window_log_probs(cand_path, text, n_ctx, n_chunks, flash_attn)
    scored = scored_positions(n_ctx)
    kld, same, nll_p, nll_q = [], [], [], []
    for i, (lp_all, lq_all) in enumerate(zip(ref_windows, cand_windows, strict=True)):
        lp, lq = lp_all[scored], lq_all[scored]
        kld.extend((np.exp(lp) * (lp - lq)).sum(axis=1))
        same.extend(lp.argmax(axis=1) == lq.argmax(axis=1))
        targets = [tokens[i * n_ctx + pos + 1] for pos in scored]
        nll_p.extend(-lp[np.arange(len(targets)), targets])
        nll_q.extend(-lq[np.arange(len(targets)), targets])
    return {
        "kld_mean": float(np.mean(kld)),
        "kld_p99": float(np.percentile(kld, 99)),
        "kld_median": float(np.median(kld)),
        "same_top": float(np.mean(same)),
        "ppl": float(np.exp(np.mean(nll_q))),
        "ref_ppl": float(np.exp(np.mean(nll_p))),
        "n": len(kld),
    }


def test_requantized_copy_loses_what_an_independent_computation_says(
    reference: Engine, candidate: Engine, english_reference: ReferenceLogits, smollm2_path: Path, q4_0_path: Path
) -> None:
    ours = compare_to_reference(candidate.model, english_reference, "docstrings")
    flash = reference.info().flash_attn
    theirs = _full_vocabulary_kld(smollm2_path, q4_0_path, english_text(), WINDOW, 3, flash)
    assert ours.n_scored == theirs["n"] == 3 * (WINDOW - 1 - WINDOW // 2)
    assert ours.kld_mean > 0.001  # a real loss ...
    assert ours.same_top < 1.0  # ... that changes some top tokens
    assert ours.kld_mean == pytest.approx(theirs["kld_mean"], rel=1e-2)  # top-512 + tail estimate vs all 49,152
    assert ours.kld_p99 == pytest.approx(theirs["kld_p99"], rel=1e-2)
    assert ours.same_top == pytest.approx(theirs["same_top"], abs=1.5 / ours.n_scored)  # one near-tie
    assert ours.ppl == pytest.approx(theirs["ppl"], rel=1e-3)
    assert ours.ref_ppl == pytest.approx(theirs["ref_ppl"], rel=1e-3)
    assert ours.ppl_delta_pct == pytest.approx((theirs["ppl"] / theirs["ref_ppl"] - 1) * 100, abs=0.2)
    assert ours.kld_stderr > 0 and ours.kld_max >= ours.kld_p99 >= ours.kld_median > 0
    # the middle token's loss, not the mean: a few tokens lose far more than most (a skewed set)
    assert ours.kld_median < 0.8 * ours.kld_mean and ours.kld_median == pytest.approx(theirs["kld_median"], rel=2e-2)
    # the same-top share's uncertainty of a sample of n (n - 1, as the other figures' own)
    n = ours.n_scored
    assert ours.same_top_stderr == pytest.approx(math.sqrt(ours.same_top * (1 - ours.same_top) / (n - 1)), rel=1e-9)
    assert ours.same_top_stderr != pytest.approx(math.sqrt(ours.same_top * (1 - ours.same_top) / n), rel=1e-4)


def test_the_original_against_itself_loses_nothing(reference: Engine, english_reference: ReferenceLogits) -> None:
    same = compare_to_reference(reference.model, english_reference, "self")
    assert same.kld_mean == 0.0 and same.kld_max == 0.0
    assert same.same_top == 1.0
    assert same.ppl == pytest.approx(same.ref_ppl, rel=1e-12)
    assert same.ppl > 1.5


def test_a_cached_reference_is_timed_again_after_a_warm_up(
    reference: Engine, english_reference: ReferenceLogits, smollm2_path: Path
) -> None:
    built, key = english_reference, _english_key(smollm2_path)
    cached = load_reference(built.path, key)
    assert cached is not None and cached.meta["decode_seconds"] == built.meta["decode_seconds"]
    said: list[str] = []
    time_reference(reference.model, cached, said.append)
    # its first window once to warm up, then timed twice; the median stands for all three windows
    assert said == ["reference speed window 1/3", "reference speed window 2/3", "reference speed window 3/3"]
    assert cached.timed_windows == 2 and cached.meta["decode_seconds"] != built.meta["decode_seconds"]
    assert load_reference(built.path, key).meta == built.meta  # type: ignore[union-attr]  # the file untouched


def test_different_vocabularies_are_refused_in_one_sentence(
    smollm2_path: Path, gemma_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(VocabularyMismatch, match="different vocabulary"):
        check_same_vocabulary(smollm2_path, gemma_path)
    doc = tmp_path / "memo.txt"
    doc.write_text(english_text(), encoding="utf-8")
    rc = main(["eval", "-p", str(kld_profile_file(tmp_path, "smol", smollm2_path)),
               "-p", str(kld_profile_file(tmp_path, "gemma", gemma_path)), "--kld", str(doc), "--no-save"])
    err = capsys.readouterr().err.strip()
    assert rc == 1
    assert "\n" not in err and "Traceback" not in err
    assert gemma_path.name in err and "different vocabulary" in err and "cannot be compared" in err
    assert not any(Path(os.environ["WORKSTATION_DATA"], "kld").glob("*.kldref"))  # nothing was run


def test_cache_key_follows_the_text_and_the_model(q4_0_path: Path, tmp_path: Path) -> None:
    model = tmp_path / "copy.gguf"
    shutil.copyfile(q4_0_path, model)
    key = reference_key(model, KV, "some text", WINDOW, None, 256)
    assert key == reference_key(model, KV, "some text", WINDOW, None, 256)
    assert key_path(key) != key_path(reference_key(model, KV, "some other text", WINDOW, None, 256))
    assert key_path(key) != key_path(reference_key(model, ("q8_0", "q8_0"), "some text", WINDOW, None, 256))
    st = model.stat()
    os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # the file was rewritten
    assert key_path(key) != key_path(reference_key(model, KV, "some text", WINDOW, None, 256))


def _eval_kld(capsys: pytest.CaptureFixture[str], profiles: list[Path] | list[str], docs: list[Path]) -> list[dict]:
    args = ["eval"]
    for p in profiles:
        args += ["-p", str(p)]
    rc = main([*args, "--kld", *map(str, docs), "--ctx", "64", "--chunks", "1", "--json"])  # a window a pass
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    return json.loads(captured.out)


def test_eval_kld_reuses_the_reference_and_invalidates_it(
    smollm2_path: Path, q4_0_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ref_model = tmp_path / "reference.gguf"
    shutil.copyfile(smollm2_path, ref_model)
    ref, cand = kld_profile_file(tmp_path, "orig", ref_model), kld_profile_file(tmp_path, "q4_0", q4_0_path)
    doc = tmp_path / "memo.txt"
    doc.write_text(english_text(), encoding="utf-8")

    first = _eval_kld(capsys, [ref, cand], [doc])
    # each profile's writing timed on its loaded model too (a short tg: "Which to pick" weighs it)
    assert all(p["tg_ts"] > 0 for p in first), [p["tg_ts"] for p in first]
    reference = first[0]["kld_reference"][0]
    assert reference["cache_reused"] is False
    cache = Path(reference["cache_path"])
    assert cache.exists() and cache.stat().st_size == reference["cache_bytes"]
    # the document's tokens, its owner's alone, as the saved KV states (they were 644 in a 755 folder)
    assert (cache.stat().st_mode & 0o777, cache.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    written = cache.stat().st_ino  # a rewrite is a new file (written aside, then renamed)
    loss = first[1]["kld"][0]
    assert loss["kld_mean"] > 0 and loss["same_top"] < 1 and loss["cache_reused"] is False

    again = _eval_kld(capsys, [ref, cand], [doc])  # adding a candidate later: only its own pass
    assert again[0]["kld_reference"][0]["cache_reused"] is True
    # its speed measured again now: its first window after a warm-up, twice (the first run's,
    # of its one window, said "x faster" of this one)
    assert (reference["speed_windows"], again[0]["kld_reference"][0]["speed_windows"]) == (1, RETIME_WINDOWS)
    assert again[0]["kld_reference"][0]["decode_seconds"] != reference["decode_seconds"]
    assert again[1]["kld"][0]["ref_decode_seconds"] == again[0]["kld_reference"][0]["decode_seconds"]
    assert again[0]["kld_reference"][0]["cache_path"] == str(cache) and cache.stat().st_ino == written
    assert again[1]["kld"][0]["kld_mean"] == pytest.approx(loss["kld_mean"], rel=1e-9)

    doc.write_text(english_text() + "\n\nOne more paragraph.", encoding="utf-8")  # the text changed
    changed = _eval_kld(capsys, [ref, cand], [doc])
    assert changed[0]["kld_reference"][0]["cache_reused"] is False
    assert changed[0]["kld_reference"][0]["cache_path"] != str(cache)

    st = ref_model.stat()
    os.utime(ref_model, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # the model changed
    touched = _eval_kld(capsys, [ref, cand], [doc])
    assert touched[0]["kld_reference"][0]["cache_reused"] is False

    damaged = Path(touched[0]["kld_reference"][0]["cache_path"])
    damaged.write_bytes(damaged.read_bytes()[:-10])  # a cut-off cache file is recomputed
    key_file = damaged
    healed = _eval_kld(capsys, [ref, cand], [doc])
    assert healed[0]["kld_reference"][0]["cache_reused"] is False
    assert Path(healed[0]["kld_reference"][0]["cache_path"]) == key_file
    assert healed[1]["kld"][0]["kld_mean"] == pytest.approx(touched[1]["kld"][0]["kld_mean"], rel=1e-9)

    # no data folder to keep it in: measured and printed all the same, then said (it stopped before measuring)
    monkeypatch.setenv("WORKSTATION_DATA", str(doc))
    rc = main(["eval", "-p", str(ref), "-p", str(cand), "--kld", str(doc), "--ctx", "64", "--chunks", "1",
               "--json", "--no-save"])
    out, err = capsys.readouterr()
    unkept = json.loads(out)
    assert rc == 0 and unkept[0]["kld_reference"][0]["cache_kept"] is False, err
    assert unkept[1]["kld"][0]["kld_mean"] == pytest.approx(healed[1]["kld"][0]["kld_mean"], rel=1e-9)
    assert err.rstrip().endswith(f"were not kept, so the next run measures them again: The data folder {doc}, "
                                 f"where conversations and measurements are kept, cannot be used: {doc} is a file, "
                                 "not a folder; set WORKSTATION_DATA to a folder you can write in. "
                                 "WORKSTATION_KLD_CACHE names another folder for them."), err
    assert not Path(unkept[0]["kld_reference"][0]["cache_path"]).parent.exists()  # its folder of its own removed


def test_load_reference_refuses_another_key(english_reference: ReferenceLogits, smollm2_path: Path) -> None:
    built, key = english_reference, _english_key(smollm2_path)
    assert load_reference(built.path, key) is not None
    assert load_reference(built.path, {**key, "top_k": 64}) is None


def test_the_reference_cache_keeps_to_its_budget(
    reference: Engine, smollm2_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WORKSTATION_KLD_CACHE_MB: a new reference pushes out the least recently used ones; the
    one just made always stays."""
    text = english_text()
    first = build_reference(reference.model, text, reference_key(smollm2_path, KV, text, WINDOW, 1, 32), tmp_path)
    monkeypatch.setenv("WORKSTATION_KLD_CACHE_MB", "0")
    second = build_reference(reference.model, text, reference_key(smollm2_path, KV, text, WINDOW, 1, 16), tmp_path)
    assert second.path.exists() and not first.path.exists()


def test_a_bad_cache_budget_is_said_before_any_model_loads(
    smollm2_path: Path, q4_0_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A mistyped WORKSTATION_KLD_CACHE_MB was refused only after the reference pass (minutes
    for an 8B model) had run and been thrown away."""
    doc = tmp_path / "memo.txt"
    doc.write_text(english_text(), encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_KLD_CACHE_MB", "1GB")
    rc = main(["eval", "-p", str(kld_profile_file(tmp_path, "orig", smollm2_path)),
               "-p", str(kld_profile_file(tmp_path, "q4_0", q4_0_path)), "--kld", str(doc), "--no-save"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "\n" not in err and "WORKSTATION_KLD_CACHE_MB is '1GB'" in err
    assert not any(Path(os.environ["WORKSTATION_DATA"], "kld").glob("*.kldref*"))  # nothing was run
    out = tmp_path / "q8.gguf"  # nor is a quantization that would be measured with it
    rc = main(["models", "quantize", str(smollm2_path), "-t", "q8_0", "--allow-requantize", "-o", str(out),
               "--kld", str(doc)])
    assert rc == 1 and "WORKSTATION_KLD_CACHE_MB is '1GB'" in capsys.readouterr().err and not out.exists()


def test_one_row_per_document_in_any_format(
    smollm2_path: Path, q4_0_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref, cand = kld_profile_file(tmp_path, "orig", smollm2_path), kld_profile_file(tmp_path, "q4_0", q4_0_path)
    english = make_docx(tmp_path / "policy.docx", [("Policy", english_text().split("\n\n")[:6])])
    turkish = tmp_path / "duyuru.html"
    turkish.write_text(f"<html><body><h1>Duyuru</h1><p>{TURKISH}</p></body></html>", encoding="utf-8")
    rc = main(["eval", "-p", str(ref), "-p", str(cand), "--kld", str(english), str(turkish),
               "--ctx", "64", "--chunks", "1"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    lines = captured.out.splitlines()
    header = lines[0]
    assert "KLD mean" in header and "same top" in header and "Δppl" in header
    rows = [line for line in lines[2:] if line.startswith("| ")]
    assert len(rows) == 4  # two profiles x two documents
    q4_rows = [r for r in rows if r.startswith("| q4_0")]
    assert {"policy.docx", "duyuru.html"} == {r.split("|")[4].strip() for r in q4_rows}
    assert all("(reference)" in r for r in rows if r.startswith("| orig"))
    # each model as 'models list' names it (it said the file's name, .gguf and all)
    assert [r.split("|")[2].strip() for r in rows] == ["smollm2-135m-instruct-q4_1"] * 2 + ["SmolLM2-135M-Instruct.Q4_0"] * 2
    # in the units every size is said in (it said "0.4 MiB cached (12 KiB per 1,000 tokens)"); the tokens the
    # cache is for said beside it ("126 KB cached (2 MB per 1,000 tokens)" read as a part larger than its whole)
    assert re.search(r"log-probabilities per scored token: \d+ [KM]B cached for these 128 tokens of text \(about "
                     r"\d+ [KM]B for each 1,000 tokens of text\)", captured.out), \
        captured.out
    saved = [h for h in history(kind="eval", test="kld_mean")]
    assert len(saved) == 4
    losses = {h.data["document"]: h for h in saved if not h.data["reference"]}
    assert set(losses) == {"policy.docx", "duyuru.html"}
    assert all(h.value and h.value > 0 and h.data["file_type"] == "Q4_0" for h in losses.values())


def test_quantize_offers_the_kld_and_runs_it(smollm2_path: Path, tmp_path: Path) -> None:
    """In a terminal (a real one: a pty), quantize offers to measure what the copy loses on a
    document of the person's; a path that is not there is said and asked again."""
    import pty
    import subprocess

    from conftest import read_terminal

    doc = tmp_path / "memo.txt"
    doc.write_text(english_text()[:400], encoding="utf-8")  # one window of 64 tokens (82 of them)
    out = tmp_path / "copy.Q4_0.gguf"
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workstation.cli", "models", "quantize", str(smollm2_path), "-t", "q4_0",
         "--allow-requantize", "-o", str(out), "--ctx", "64", "--threads", "1"],
        stdin=slave, stderr=slave, stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parent.parent, text=True)
    os.close(slave)
    try:
        asked = read_terminal(master, lambda seen: b"Measure what it costs" in seen, 300, "offered the KLD")
        os.write(master, b"no-such-file.txt\n")
        asked += read_terminal(master, lambda seen: (asked + seen).count(b"Measure what it costs") >= 2, 60,
                               "asked again after a path that is not there")
        os.write(master, str(doc).encode() + b"\n")
        printed, _ = proc.communicate(timeout=300)
        asked += read_terminal(master, lambda seen: False, 1, "")  # what it said after
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    said = asked.decode("utf-8", "replace").replace("\r\n", "\n")
    assert proc.returncode == 0, said
    assert said.count("Measure what it costs") == 2  # a missing file is said and asked again
    assert "no-such-file.txt" in said
    assert f"profiles new {out}" in said  # how to run the copy (-p with its name said "no profile")
    assert f"wrote {out}" in printed and "KLD mean" in printed and "(reference)" in printed
    row = next(line for line in printed.splitlines() if line.startswith("| copy.Q4_0"))
    assert "memo.txt" in row
    same_top = float(row.split("|")[7].split("±")[0].strip().rstrip("%"))  # as the table has it
    plain = re.search(r"^In plain words, on memo\.txt: copy\.Q4_0 picks the same next word as \S+ (\d+)% of the "
                      r"time, and writes (practically as well|very nearly as well|a little worse|"
                      r"noticeably worse|clearly worse)\.$", printed, re.MULTILINE)
    assert plain is not None and int(plain.group(1)) == round(same_top), printed


def test_quantize_with_kld_prints_json(
    smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "memo.txt"
    doc.write_text(english_text()[:400], encoding="utf-8")  # one window of 64 tokens (82 of them)
    out = tmp_path / "copy.Q8_0.gguf"
    rc = main(["models", "quantize", str(smollm2_path), "-t", "q8_0", "--allow-requantize", "-o", str(out),
               "--kld", str(doc), "--ctx", "64", "--threads", "1", "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    data = json.loads(captured.out)
    assert data["path"] == str(out)
    ref, cand = data["kld"]
    assert ref["kld_reference"][0]["document"] == "memo.txt"
    assert cand["model_filename"] == str(out)
    assert 0 < cand["kld"][0]["kld_mean"] < 0.05  # Q8_0 of a Q4_1 model: close, not identical
    short = tmp_path / "note.txt"  # shorter than the default window: the copy is kept, and said to be
    short.write_text("The canteen closes at two on Friday.", encoding="utf-8")
    again = tmp_path / "again.Q8_0.gguf"
    rc = main(["models", "quantize", str(smollm2_path), "-t", "q8_0", "--allow-requantize", "-o", str(again),
               "--kld", str(short), "--threads", "1"])
    err = capsys.readouterr().err
    assert rc == 1 and again.exists()
    assert "workstation: again.Q8_0.gguf was made, but what it loses was not measured: note.txt: The text is only " in err


# --- the TUI's chart -------------------------------------------------------------------------------
def test_bar_scales_in_eighths() -> None:
    from workstation.tui.screens.quantization import bar

    assert bar(2.0, 2.0, 16) == "█" * 16
    assert bar(1.0, 2.0, 16) == "█" * 8
    assert bar(1.0, 8.0, 4) == "▌"  # half a cell
    assert bar(0.0, 2.0) == "" and bar(1.0, 0.0) == ""


async def test_quantization_screen_charts_the_newest_kld_run(
    smollm2_path: Path, q4_0_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from textual.widgets import DataTable, Static

    from workstation.tui.app import WorkstationApp
    from workstation.tui.screens.quantization import QuantizationScreen

    folder = tmp_path / "profiles"
    folder.mkdir()
    ref, cand = kld_profile_file(folder, "orig", smollm2_path), kld_profile_file(folder, "q4_0", q4_0_path)
    monkeypatch.setenv("WORKSTATION_PROFILES", str(folder))
    app = WorkstationApp("orig", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(140, 30)) as pilot:  # nothing saved yet: the screen says how
        await pilot.press("f12")
        await workers_done(pilot)
        await pilot.pause()
        assert isinstance(app.screen, QuantizationScreen)
        assert "No KL divergence results yet" in str(app.screen.query_one("#quality-title", Static).render())

    doc = tmp_path / "memo.txt"
    doc.write_text(english_text(), encoding="utf-8")
    # an earlier run, of another comparison: two of one name ("orig · m"), with different model
    # files, which F12 pooled into one row (by the profile's name)
    for folder_name, model in (("a", smollm2_path), ("b", q4_0_path)):
        (tmp_path / folder_name).mkdir()
        (tmp_path / folder_name / "m.gguf").symlink_to(model)
    _eval_kld(capsys, [f"{ref} model={tmp_path / d / 'm.gguf'}" for d in "ab"], [doc])
    data = _eval_kld(capsys, [ref, cand], [doc])
    loss = data[1]["kld"][0]
    needs = {}  # what `fit` says each profile needs
    for name in ("orig", "q4_0"):
        assert main(["fit", "-p", name, "--json"]) == 0
        needs[name] = json.loads(capsys.readouterr().out)["total_bytes"]
    app = WorkstationApp("orig", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.press("f12")
        await workers_done(pilot)
        await pilot.pause()
        # the newest run; o shows the one before (a second run hid the first for good), n comes back
        assert "eval --kld run 1 of 2" in str(app.screen.query_one("#quality-title", Static).render())
        await pilot.press("o")
        await workers_done(pilot)
        await pilot.pause()
        assert "run 2 of 2" in str(app.screen.query_one("#quality-title", Static).render())
        older = str(app.screen.query_one("#quality-chart").render()).splitlines()[1:]
        assert [line.split()[:3] for line in older] == [
            ["orig", f"model={tmp_path / d / 'm.gguf'}", q] for d, q in (("a", "Q4_1"), ("b", "Q4_0"))], older
        assert app.screen.query_one(DataTable).get_row_at(0)[0] == f"orig model={tmp_path / 'b' / 'm.gguf'}"
        await pilot.press("o", "n")
        await workers_done(pilot)
        await pilot.pause()
        chart = str(app.screen.query_one("#quality-chart", Static).render())
        lines = chart.splitlines()
        assert "KL divergence" in lines[0] and "memory" in lines[0] and "reading (tok/s)" in lines[0]
        orig = next(line for line in lines if line.startswith("orig Q4_1"))
        q4 = next(line for line in lines if line.startswith("q4_0 Q4_0"))
        assert "reference" in orig and "100.0%" in orig
        # the memory the profile needs as `fit` and F4 say it (the planner's total: weights, repacked
        # copy, compute buffers, K/V cache); it said the file + K/V (186 MB beside fit's 282 MB)
        for name, line in (("orig", orig), ("q4_0", q4)):
            assert f" {file_size_text(needs[name])} " in line, (name, needs, line)
        saved = next(h for h in history(kind="eval", test="kld_mean") if h.profile == "orig")
        assert saved.data["model_bytes"] + saved.data["kv_bytes"] < saved.data["total_bytes"]
        assert "memory needed" in lines[0]
        assert f"{loss['kld_mean']:.4f}" in q4 and f"{loss['same_top'] * 100:.1f}%" in q4
        assert "█" in q4.split(f"{loss['kld_mean']:.4f}")[1]  # the loss bar (the largest loss fills it)
        legend = str(app.screen.query_one("#quality-legend", Static).render())  # the columns in words
        assert all(f"{name}:" in legend for name in ("KL divergence", "p99", "Same top", "Δppl")), legend
        table = app.screen.query_one(DataTable)
        assert table.row_count == 1
        assert table.get_row_at(0)[:2] == ["q4_0", "memo.txt"]
        await pilot.resize_terminal(80, 30)  # narrower bars: no line wraps
        await pilot.pause()
        narrow = str(app.screen.query_one("#quality-chart", Static).render()).splitlines()
        assert max(len(line) for line in narrow) <= 80 and max(len(line) for line in lines) > 80
        assert f"{loss['kld_mean']:.4f}" in next(line for line in narrow if line.startswith("q4_0 Q4_0"))
        title = str(app.screen.query_one("#quality-title", Static).render())
        assert re.search(r"\(\d{4}-\d\d-\d\d \d\d:\d\d\)", title), title  # local time, not 2026-12-05T03:38:44Z
        assert title.endswith("), 1 document"), title  # one document: not "1 document(s)"
        await pilot.press("f9")  # Turkish: title, chart, legend and table said again (they stayed English)
        await workers_done(pilot)
        await pilot.pause()
        turkish_title = str(app.screen.query_one("#quality-title", Static).render())
        assert "modeline göre" in turkish_title and re.search(r"\(\d\d\.\d\d\.\d{4} \d\d:\d\d\)", turkish_title)
        assert str(app.screen.query_one("#quality-legend", Static).render()).startswith("KL ıraksaması")
        turkish = str(app.screen.query_one("#quality-chart", Static).render()).splitlines()
        assert "aynı tahmin" in turkish[0] and max(len(line) for line in turkish) <= 80, turkish
        assert f"{loss['kld_mean']:.4f}".replace(".", ",") in turkish[2]
        assert [str(c.label) for c in table.columns.values()][:2] == ["Profil", "Belge"]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.chat_screen


def test_a_document_shorter_than_the_window_is_named(
    smollm2_path: Path, q4_0_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref, cand = kld_profile_file(tmp_path, "orig", smollm2_path), kld_profile_file(tmp_path, "q4_0", q4_0_path)
    long, short = tmp_path / "long.txt", tmp_path / "note.txt"
    long.write_text(english_text(), encoding="utf-8")
    short.write_text("Lunch is at noon.", encoding="utf-8")
    # alone, it is named, before any pass is read (it came after the others', 19 s of a reference lost)
    rc = main(["eval", "-p", str(ref), "-p", str(cand), "--kld", str(short), str(short), "--ctx", "64", "--chunks", "1",
               "--no-save"])
    said = capsys.readouterr().err.strip().splitlines()  # (off a terminal, a progress line first)
    assert rc == 1 and [line for line in said if line.startswith("workstation:")] == said[-1:]
    assert said[-1].startswith("workstation: note.txt: The text is only ") and "needs at least 64" in said[-1]
    from workstation.core.paths import kld_dir as cache_dir

    assert not list(cache_dir().glob("*")) if cache_dir().exists() else True
    # beside a long one, it is left out and said so: the others are compared (one short note in
    # a folder of documents stopped the whole run)
    rc = main(["eval", "-p", str(ref), "-p", str(cand), "--kld", str(long), str(short), "--ctx", "64", "--chunks", "1",
               "--no-save"])
    out = capsys.readouterr().out
    assert rc == 0
    rows = [line for line in out.splitlines() if line.startswith("| ") and ".txt" in line]
    assert rows and all("long.txt" in row for row in rows), out
    assert re.search(r"^Left out note\.txt: The text is only \d+ tokens; .* needs at least 64 ", out, re.M), out
    # memory, what the answers lose and which to pick, under the table and in the JSON
    assert re.search(r"^Side by side, q4_0 against orig on these documents: it needs \d+ MB for the model and its "
                     r"context memory at a context of 256 tokens \(.* which holds 256 tokens .*\), against \d+ MB;", out, re.M), out
    assert re.search(r"^Which to pick: (orig|q4_0)[:;] ", out, re.M), out
    # the whole documents timed by bench: the ones just given, not "YOUR_DOCUMENTS" (the short one too)
    assert f"--document {shell_word(str(long))} {shell_word(str(short))} times whole documents" in out, out
    rc = main(["eval", "-p", str(ref), "-p", str(cand), "--kld", str(long), str(short), "--ctx", "64", "--chunks", "1",
               "--no-save", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [r["document"] for r in data[0]["kld_reference"]] == ["long.txt"]
    assert [k["document"] for k in data[1]["kld"]] == ["long.txt"]
    assert data[0]["kld_left_out"][0].startswith("note.txt: The text is only ")
    assert data[1]["memory"]["model_bytes"] == q4_0_path.stat().st_size and data[1]["memory"]["context"] == 256
    assert 0 < data[1]["memory"]["kv_bytes"] == data[0]["memory"]["kv_bytes"]  # the same K/V types


def ref(doc: str) -> ReferenceRow:
    """A reference pass's row over ``doc``: 1,024 tokens in 4 s (256 tok/s), its two windows 1.98 s and 2.02 s."""
    return ReferenceRow(doc, 20.0, 0.5, 512, 2, 5.0, 4.0, 64, "", 0, 0.0, False, 2, window_seconds=[1.98, 2.02])


def cand(doc: str, decode_s: float) -> KLDResult:
    """A candidate's KL divergence pass over ``doc``, its 1,024 tokens decoded in ``decode_s``."""
    return KLDResult(doc, 0.02, 0.001, 0.1, 0.01, 1.0, 0.9, 0.01, 21.0, 0.5, 20.0, 0.5, 0.05, 0.01, 512, 2,
                     900, 64, decode_s + 1, 5.0, decode_s, 4.0, 0, 0.0, False,
                     window_seconds=[decode_s / 2 * 0.99, decode_s / 2 * 1.01])  # (each window as the reference's)


def test_a_speed_that_goes_both_ways_over_the_documents_is_said() -> None:
    """The same profile read "1.23x slower" on one document and "1.51x faster" on the other,
    with no word that one timed pass each is a busy moment's to decide."""
    from workstation.commands.eval import ProfileEval, kld_speed_notes

    reference = ProfileEval("office-cpu", "a.gguf", "f16", "f16", references=[ref("minutes.txt"), ref("policy.md")])
    both_ways = ProfileEval("kv-q4", "a.gguf", "q4_0", "q4_0", kld=[cand("minutes.txt", 5.0), cand("policy.md", 2.6)])
    assert kld_speed_notes([reference, both_ways]) == [
        "note: kv-q4's speed against office-cpu went both ways (0.80x to 1.54x on these documents): each is one "
        "pass, so another program using the CPU decides it; workstation bench -p office-cpu -p kv-q4 compares "
        "their speed, repeated side by side."]
    one_way = ProfileEval("kv-q4", "a.gguf", "q4_0", "q4_0", kld=[cand("minutes.txt", 5.0), cand("policy.md", 6.0)])
    assert kld_speed_notes([reference, one_way]) == []  # slower on both: said by the table alone


def test_each_documents_row_says_its_own_speed_and_a_note_the_whole_runs() -> None:
    """The first document's row said the whole run's speed ("1.81x slower" beside its own tok/s,
    which made 1.56x); each row says its own, and a line under the table the whole run's."""
    from workstation.commands.eval import ProfileEval, compare, format_eval

    reference = ProfileEval("office-cpu", "a.gguf", "f16", "f16", references=[ref("minutes.txt"), ref("policy.md")])
    slower = ProfileEval("kv-q4", "a.gguf", "q4_0", "q4_0", kld=[cand("minutes.txt", 8.0), cand("policy.md", 5.0)])
    table = format_eval([reference, slower], [compare(reference, reference), compare(reference, slower)])
    rows = {line.split("|")[4].strip(): line.split("|")[-2].strip() for line in table.splitlines()
            if line.startswith("| kv-q4")}
    assert rows == {"minutes.txt": "2.00x slower", "policy.md": "1.25x slower"}, table
    assert "kv-q4 against office-cpu over all 2 documents: 1.62x slower." in table, table


def test_side_by_side_says_memory_and_which_to_pick(smollm2_path: Path) -> None:
    """A team lead choosing between full and "half size" context memory on the office's own
    documents got KLD, Δppl and tok/s columns, and no word of the memory the choice is made for,
    nor of which to take: under the table, one sentence each (the model's file and its context
    memory as the planner counts them, no model loaded)."""
    import dataclasses

    from workstation.commands.eval import ProfileEval, compare, format_eval
    from workstation.core.model_info import read_model_info
    from workstation.core.planner import plan

    model = str(smollm2_path)
    info = read_model_info(model, check=False)
    kv = {t: plan(info, context=4096, type_k=t, type_v=t, gpus=[]).kv_cache_bytes for t in ("f16", "q8_0", "q4_0")}
    whole = plan(info, context=4096, gpus=[])
    model_part = whole.total_bytes - whole.kv_cache_bytes  # its weights, any repacked copy, its compute buffers
    assert not whole.repack_bytes  # (Q4_1: no second copy; said in fit's parts, "the model 192 MB" was not fit's)
    weights, compute = file_size_text(whole.weights_bytes), file_size_text(whole.compute_bytes)
    reference = ProfileEval("office-cpu", model, "f16", "f16", references=[ref("letter.txt"), ref("report.txt")],
                            context=4096)

    def candidate(name: str, kv_type: str, kld: float, decode_s: float) -> ProfileEval:
        return ProfileEval(name, model, kv_type, kv_type, context=4096, kld=[
            dataclasses.replace(cand(doc, decode_s), kld_mean=kld) for doc in ("letter.txt", "report.txt")])

    half, quarter = candidate("kv-half", "q8_0", 0.003, 8.0), candidate("kv-quarter", "q4_0", 0.2, 8.0)
    results = [reference, half, quarter]
    said = format_eval(results, [compare(reference, r) for r in results])
    # its columns in plain words under the table, as bench's
    assert ("KLD mean: how far its odds for each next word are from the reference's, on average (KL divergence; 0: "
            "the same); KLD p99: the same for the worst word in 100; same top: how often it picks the same most "
            "likely next word as the reference;") in said, said
    assert "Δppl: that perplexity against the reference's; KLD tok/s: tokens of the documents read a second" in said
    size, full = file_size_text(model_part + kv["q8_0"]), file_size_text(model_part + kv["f16"])
    assert (f"Side by side, kv-half against office-cpu on these documents: it needs {size} for the model and its "
            f"context memory at a context of 4,096 tokens (the model itself (weights) {weights}, working memory while "
            f"it writes (compute) {compute}, and {file_size_text(kv['q8_0'])} of context memory, half size, which "
            "holds 4,096 tokens of conversation and documents; as workstation fit and F4 count it), against "
            f"{full}; writes practically as well; reads your documents 2.00x slower.") in said, said
    saved = file_size_text(kv["f16"] - kv["q8_0"])
    assert (f"Which to pick: kv-half where memory is short (it needs {saved} less, so a longer context fits in the "
            "same memory) and writes practically as well; else office-cpu, as kv-half reads your documents 2.00x "
            "slower.") in said, said
    assert ("Which to pick: office-cpu; kv-quarter writes noticeably worse on these documents, though it needs "
            f"{file_size_text(kv['f16'] - kv['q4_0'])} less memory: take it only where office-cpu does not fit."
            ) in said, said
    # the pick weighs writing too (a short tg each): "prefer Q8_0, as office-cpu reads your documents 1.36x slower"
    # said nothing of office-cpu writing faster
    from workstation.core.bench import SpeedStat

    writer = dataclasses.replace(reference, writing=SpeedStat(16, [400_000_000, 401_000_000, 399_000_000]))
    quick = dataclasses.replace(half, writing=SpeedStat(16, [300_000_000, 301_000_000, 299_000_000]))
    trade = format_eval([writer, quick], [compare(writer, r) for r in (writer, quick)])
    assert (f"Which to pick: kv-half where memory is short or people wait for replies (it needs {saved} less, so a "
            "longer context fits in the same memory, and it writes replies 1.33x faster) and writes practically as "
            "well; else office-cpu, as kv-half reads your documents 2.00x slower.") in trade, trade
    assert "writes practically as well; reads your documents 2.00x slower; writes replies 1.33x faster." in trade
    assert ("These speeds are of windows of 512 tokens; workstation bench -p office-cpu -p kv-half -p kv-quarter "
            "--document YOUR_DOCUMENTS times whole documents: the wait for the first word and the writing.") in said
    # a variant named on the command line (-p "office-cpu kv_cache=q8_0"): its name says what differs, and the
    # command said again names it as -p takes it (its name is no profile's)
    variant = dataclasses.replace(half, profile="office-cpu · K/V half size", ref="office-cpu kv_cache=q8_0")
    said = format_eval([reference, variant], [compare(reference, r) for r in (reference, variant)])
    assert "Side by side, office-cpu · K/V half size against office-cpu on these documents" in said, said
    assert "workstation bench -p office-cpu -p office-cpu\\ kv_cache=q8_0 --document YOUR_DOCUMENTS" in said, said
    # one 512-token window on a busy PC said "1.32x faster" as a fact, and a same top of 99.61% "100% of the time"
    once = dataclasses.replace(half, kld=[dataclasses.replace(cand("letter.txt", 3.0), kld_mean=0.003, n_chunks=1,
                                                               same_top=0.9961, window_seconds=[3.0])])
    lone = dataclasses.replace(reference, references=[dataclasses.replace(ref("letter.txt"), n_chunks=1,
                                                                          decode_seconds=4.0, window_seconds=[4.0])])
    said = format_eval([lone, once], [compare(lone, r) for r in (lone, once)])
    assert "kv-half picks the same next word as office-cpu 99.6% of the time" in said, said
    # one window each, once: within the run's own noise (bench's test), so neither faster nor slower
    assert "reads your documents at about the same speed on this run." in said, said
    assert "1.33x" not in said.split("\n", 3)[-1], said
    spread = dataclasses.replace(half, kld=[cand("letter.txt", 8.0), cand("report.txt", 4.0)])
    said = format_eval([reference, spread], [compare(reference, r) for r in (reference, spread)])
    assert "reads your documents at about the same speed on this run." in said, said


def test_a_speed_beyond_what_the_settings_allow_never_reaches_the_advice(smollm2_path: Path) -> None:
    """Two K/V types of one file: "Which to pick: office-cpu · no drafting: it needs 42 MB less
    memory and writes replies 44.35x faster" (tg8 runs a busy moment stalled; bench measured
    1.40x between two files). Beyond 3x (or the files' size ratio) a speed is left out of the
    table, the side by side and the pick, and a note says why."""
    import dataclasses

    from workstation.commands.eval import ProfileEval, compare, format_eval
    from workstation.core.bench import SpeedStat

    model = str(smollm2_path)
    reference = ProfileEval("office-cpu", model, "f16", "f16", references=[ref("letter.txt")], context=4096,
                            writing=SpeedStat(8, [4_400_000_000, 4_500_000_000, 4_300_000_000]))  # 1.8 tok/s
    other = ProfileEval("office-cpu · no drafting", model, "f16", "f16", context=4096,
                        kld=[dataclasses.replace(cand("letter.txt", 4.0), kld_mean=0.0)],
                        writing=SpeedStat(8, [100_000_000, 101_000_000, 99_000_000]))  # 80 tok/s
    said = format_eval([reference, other], [compare(reference, r) for r in (reference, other)])
    assert "44" not in said.split("note:")[0] and "x faster" not in said.split("note:")[0], said
    assert ("note: office-cpu · no drafting's writing speed (of the replies) against office-cpu is left out: it came "
            "out 44.00x faster, "
            "more than these settings can make (at most 3.0x), so another program busy on this PC slowed one of "
            "them;") in said, said
    # the reading (the KL divergence pass's) too: 10.34x between one model's files is not theirs
    quick = dataclasses.replace(other, writing=None, kld=[dataclasses.replace(cand("letter.txt", 4.0 / 10.34),
                                                                              kld_mean=0.0)])
    deltas = [compare(reference, r) for r in (reference, quick)]
    assert deltas[1]["speed_ratio"] is None and deltas[1]["speed_ratio_unbelievable"] == pytest.approx(10.34)
    said = format_eval([reference, quick], deltas)
    assert "10.34" not in said.split("note:")[0] and "came out 10.34x faster" in said, said
    assert "no drafting's reading speed (of the documents) against office-cpu is left out: it came out 10.34x" in said
    assert "Which to pick: office-cpu: office-cpu · no drafting saves no memory and is no faster here." in said, said
    # one stalled run of three moves the mean, not the median: the writing said is the median's
    steady = dataclasses.replace(reference, writing=SpeedStat(8, [100_000_000, 100_000_000, 2_000_000_000]))
    same = dataclasses.replace(other, writing=SpeedStat(8, [100_000_000, 100_000_000, 100_000_000]))
    said = format_eval([steady, same], [compare(steady, r) for r in (steady, same)])
    assert "writes replies as fast" in said, said
    # one 512-token window each, once: the same settings twice read "1.19x faster" and that was the pick
    once = dataclasses.replace(other, writing=None, kld=[dataclasses.replace(cand("letter.txt", 4.0 / 1.19),
                                                                             kld_mean=0.0, n_chunks=1)])
    said = format_eval([reference, once], [compare(reference, r) for r in (reference, once)])
    assert "Which to pick: office-cpu: office-cpu · no drafting saves no memory and is no faster here." in said, said


def test_the_reference_is_the_file_with_the_most_bits_and_a_better_candidate_is_never_called_worse(
    smollm2_path: Path, q4_0_path: Path
) -> None:
    """Q4_0 given first (as bench's suggested command keeps them) was the yardstick, and Q8_0 was
    called "writes noticeably worse" at a Δppl of −17.2%. The reference is the file with the
    most bits per weight unless --reference names one; a candidate whose perplexity came out
    lower than the reference's is never called worse, and the pick says the reference is no
    yardstick."""
    import dataclasses

    from workstation.commands.eval import (
        ProfileEval,
        bits_per_weight,
        compare,
        format_eval,
        reference_first,
    )

    q8_0 = requantized_copy(smollm2_path, "q8_0")
    given = [make_profile(q4_0_path), make_profile(smollm2_path), make_profile(q8_0)]
    assert bits_per_weight(given[2]) > bits_per_weight(given[1]) > bits_per_weight(given[0]) > 4
    assert [p.model for p in reference_first(given)] == [str(q8_0), str(q4_0_path), str(smollm2_path)]
    assert [p.model for p in reference_first(given, 1)] == [str(smollm2_path), str(q4_0_path), str(q8_0)]
    # of one file, the K/V cache that keeps the most bits (a q8_0 K/V given first tied with the f16 and was the yardstick)
    kv = [make_profile(q4_0_path, kv_cache={"k": "q8_0", "v": "q8_0"}), make_profile(q4_0_path, kv_cache={"k": "f16", "v": "q8_0"}),
          make_profile(q4_0_path)]
    assert [(p.kv_cache.k, p.kv_cache.v) for p in reference_first(kv)] == [("f16", "f16"), ("q8_0", "q8_0"), ("f16", "q8_0")]

    reference = ProfileEval("q4_0", str(q4_0_path), "f16", "f16", references=[ref("letter.txt")], context=4096)
    better = ProfileEval("q8_0", str(q8_0), "f16", "f16", context=4096, kld=[
        dataclasses.replace(cand("letter.txt", 4.0), kld_mean=0.2, ppl=16.56, ref_ppl=20.0)])  # Δppl −17.2%
    said = format_eval([reference, better], [compare(reference, r) for r in (reference, better)])
    assert "worse" not in said, said
    assert ("In plain words, on letter.txt: q8_0 picks the same next word as q4_0 90% of the time, and differs "
            "from it, but q8_0 scored better than the reference q4_0 on letter.txt (perplexity −17.2%), so q4_0 is "
            "not a good yardstick.") in said, said
    assert ("Which to pick: this run cannot tell, as q8_0 scored better than the reference q4_0 on letter.txt "
            "(perplexity −17.2%), so q4_0 is not a good yardstick; compare them against a file downloaded at Q8_0 "
            "or F16 (eval --reference names the yardstick).") in said, said
    # the Q8_0 made from 4 bits is said in plain words, a candidate as much as a reference
    assert "Note: q8_0 holds no more than a 4-bit file, though its file type says more: it was made" in said, said


def test_a_reference_that_is_none_of_the_profiles_is_said_in_one_line(
    smollm2_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "letter.txt"
    doc.write_text(english_text(), encoding="utf-8")
    rc = main(["eval", "-p", str(smollm2_path), "-p", f"{smollm2_path} kv_cache=q8_0", "--kld", str(doc),
               "--reference", "office-gpu"])
    err = capsys.readouterr().err
    assert rc != 0 and "--reference office-gpu is none of the -p given" in err and "Traceback" not in err, err


def test_memory_is_the_planners_as_f4_and_fit_count_it(smollm2_path: Path, q4_0_path: Path) -> None:
    """eval said Q4_0 "needs 177 MB … against 228 MB … take it only where Q8_0 does not fit"
    (the file and the K/V cache alone) where F4 said 423 MB for Q4_0 and 417 MB for Q8_0 (a
    second copy of Q4_0's weights laid out for this CPU, the compute buffers): the side by side
    says the planner's figure at the profile's context, and the pick follows it."""
    import dataclasses

    from workstation.commands.eval import ProfileEval, _memory_dict, compare, format_eval
    from workstation.core.model_info import read_model_info
    from workstation.core.planner import plan

    q8_0 = requantized_copy(smollm2_path, "q8_0")
    planned = {p: plan(read_model_info(p, check=False), context=4096, gpus=[]) for p in (q8_0, q4_0_path)}
    reference = ProfileEval("q8_0", str(q8_0), "f16", "f16", references=[ref("letter.txt")], context=4096)
    other = ProfileEval("q4_0", str(q4_0_path), "f16", "f16", context=4096,
                        kld=[dataclasses.replace(cand("letter.txt", 4.0), kld_mean=0.4)])
    said = format_eval([reference, other], [compare(reference, r) for r in (reference, other)])
    theirs, mine = planned[q4_0_path], planned[q8_0]
    assert (f"it needs {file_size_text(theirs.total_bytes)} for the model and its context memory at a context of "
            f"4,096 tokens (the model itself (weights) {file_size_text(theirs.weights_bytes)},") in said, said
    assert f"as workstation fit and F4 count it), against {file_size_text(mine.total_bytes)};" in said, said
    if theirs.repack_bytes:  # this CPU repacks Q4_0 (AVX2 and up)
        assert ("a second copy of its weights laid out for this processor "
                f"{file_size_text(theirs.repack_bytes)}, working memory") in said, said
    if theirs.total_bytes >= mine.total_bytes * 0.95:  # no memory saved: "take it only where … does not fit" is false
        assert "less memory" not in said and "does not fit" not in said, said
    assert _memory_dict(other) == {"model_bytes": q4_0_path.stat().st_size, "kv_bytes": theirs.kv_cache_bytes,
                                   "total_bytes": theirs.total_bytes, "repack_bytes": theirs.repack_bytes,
                                   "context": 4096}


def test_the_advice_weighs_reading_and_writing_and_never_calls_noise_faster(smollm2_path: Path) -> None:
    """A first run said "Which to pick: office-cpu · K/V half size: it needs 42 MB less memory and
    reads your documents 1.20x faster" while its own side-by-side said "writes replies 2.46x slower
    (not sure…)", and 30 s later the same eval said "reads 1.03x slower". A speed within the run's
    own noise (bench's test on each window, each tg run) is "about the same speed on this run",
    never faster or slower, and picks nothing; a sure cost is said in the pick."""
    import dataclasses

    from workstation.commands.eval import ProfileEval, compare, format_eval
    from workstation.core.bench import SpeedStat

    model = str(smollm2_path)
    # the shapes of that run: 4 windows of 512 tokens each, the reference's first one cold (page-in)
    first = dataclasses.replace(ref("handbook.txt"), n_chunks=4, decode_seconds=24.1,
                                window_seconds=[7.9, 5.6, 5.5, 5.1])
    reference = ProfileEval("office-cpu", model, "f16", "f16", references=[first], context=4096,
                            writing=SpeedStat(8, [60_000_000, 66_000_000, 190_000_000]))
    half = ProfileEval("office-cpu · K/V half size", model, "q8_0", "q8_0", context=4096, kld=[dataclasses.replace(
        cand("handbook.txt", 20.1), kld_mean=0.002849, n_chunks=4, window_seconds=[5.2, 5.0, 4.9, 5.0])],
        writing=SpeedStat(8, [150_000_000, 162_000_000, 45_000_000]))
    said = format_eval([reference, half], [compare(reference, r) for r in (reference, half)])
    notes = said.split("\n(baseline)")[-1].split("\n", 4)[-1]
    assert "x faster" not in notes and "x slower" not in notes, said
    assert ("writes practically as well; reads your documents at about the same speed on this run; writes replies "
            "at about the same speed on this run.") in said, said
    assert "Which to pick: office-cpu · K/V half size where memory is short" not in said
    assert ("Which to pick: office-cpu · K/V half size: it needs 42 MB less memory and writes practically as well, "
            ) not in said
    # each told apart from the noise: the pick is a trade, its cost named
    steady = dataclasses.replace(reference, writing=SpeedStat(8, [100_000_000, 101_000_000, 99_000_000]))
    quick_reader = dataclasses.replace(half, kld=[dataclasses.replace(half.kld[0], window_seconds=[5.0, 5.05, 4.95, 5.1])],
                                       writing=SpeedStat(8, [128_000_000, 129_000_000, 127_000_000]))
    steady = dataclasses.replace(steady, references=[dataclasses.replace(first, window_seconds=[6.0, 6.1, 5.9, 6.1])])
    said = format_eval([steady, quick_reader], [compare(steady, r) for r in (steady, quick_reader)])
    assert "reads your documents 1.20x faster; writes replies 1.28x slower." in said, said
    assert ", as office-cpu · K/V half size writes replies 1.28x slower." in said, said
    assert "Which to pick: office-cpu · K/V half size where memory is short or long documents are read" in said, said


def test_f12_leaves_out_a_speed_eval_left_out(smollm2_path: Path, tmp_path: Path) -> None:
    """F12 drew "Q4_0 … reading 741 tok/s" beside 175 where eval had said under its table "left
    out: 4.25x faster, more than these settings can make": eval keeps the verdict with the run's
    rows, and F12's chart says it left the speed out instead of drawing it."""
    import dataclasses

    from workstation.commands.eval import ProfileEval, compare, result_rows
    from workstation.core.kld import quantization_points
    from workstation.core.results import history, save_run
    from workstation.tui.i18n import Texts
    from workstation.tui.screens.quantization import loss_chart

    model = str(smollm2_path)
    reference = ProfileEval("office-cpu", model, "f16", "f16", references=[ref("letter.txt")], context=4096)
    quick = ProfileEval("office-cpu · Q4_0", model, "f16", "f16", context=4096,
                        kld=[dataclasses.replace(cand("letter.txt", 4.0 / 4.25), kld_mean=0.02)])
    steady = ProfileEval("office-cpu · K/V half size", model, "q8_0", "q8_0", context=4096,
                         kld=[dataclasses.replace(cand("letter.txt", 4.4), kld_mean=0.003)])
    results = [reference, quick, steady]
    deltas = [compare(reference, r) for r in results]
    assert deltas[1]["speed_ratio"] is None and deltas[1]["speed_ratio_unbelievable"]
    db = tmp_path / "results.sqlite3"
    save_run("eval", [row for r, d in zip(results, deltas, strict=True) for row in result_rows(r, d)], "eval", db)
    _, points = quantization_points(history(kind="eval", test="kld_mean", limit=100, path=db))
    by = {p.profile: p for p in points}
    assert by["office-cpu · Q4_0"].speed_left_out and not by["office-cpu · K/V half size"].speed_left_out
    for lang, words in (("en", "left out (busy PC)"), ("tr", "dışarıda (PC meşguldü)")):
        chart = loss_chart(points, Texts(lang))
        line = next(x for x in chart.splitlines() if "Q4_0" in x)
        assert words in line and "1088" not in line and "1.088" not in line, chart
        assert "233" in next(x for x in chart.splitlines() if "half" in x or "yarı" in x), chart


def test_f12_pools_a_profiles_documents_by_their_scored_tokens(tmp_path: Path) -> None:
    """F12's point of a profile run over two documents: its losses weighted by each document's
    scored tokens (a short document counts less), its speed all the tokens over all the time."""
    import dataclasses

    from workstation.commands.eval import ProfileEval, compare, result_rows
    from workstation.core.kld import quantization_points
    from workstation.core.results import history, save_run

    reference = ProfileEval("office-cpu", "a.gguf", "f16", "f16", references=[ref("letter.txt"), ref("minutes.txt")])
    long = dataclasses.replace(cand("letter.txt", 4.0), n_scored=900, kld_mean=0.01, same_top=0.9)
    short = dataclasses.replace(cand("minutes.txt", 2.0), n_scored=300, kld_mean=0.05, same_top=0.6)
    q4 = ProfileEval("office-cpu · Q4_0", "b.gguf", "f16", "f16", kld=[long, short])
    db = tmp_path / "results.sqlite3"
    save_run("eval", [row for r in (reference, q4) for row in result_rows(r, compare(reference, r))], "eval", db)
    _, points = quantization_points(history(kind="eval", test="kld_mean", limit=100, path=db))
    point = next(p for p in points if p.profile == "office-cpu · Q4_0")
    assert point.kld_mean == pytest.approx((0.01 * 900 + 0.05 * 300) / 1200)  # 0.02, not the documents' 0.03
    assert point.same_top == pytest.approx((0.9 * 900 + 0.6 * 300) / 1200)
    tokens = long.n_ctx * long.n_chunks + short.n_ctx * short.n_chunks
    assert point.tokens_per_second == pytest.approx(tokens / (long.decode_seconds + short.decode_seconds))
