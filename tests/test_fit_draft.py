"""`fit` counts a profile's draft model: its weights, its f16 K/V at the target's context, and
the room it takes on the GPU before the target's layers are chosen (real GGUF headers, fake GPUs)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import GEMMA, SMOLLM2, as_turkish, make_profile, requantized_copy

from workstation.cli import main
from workstation.core.catalog import human_bytes
from workstation.core.errors import ModelFileError
from workstation.core.hardware import FakeGpuProbe, set_probe
from workstation.core.llama_allocation import kv_cache_per_layer
from workstation.core.model_info import read_model_info
from workstation.core.phrases import say
from workstation.core.profile_plan import plan_for_profile
from workstation.core.ram_room import RAM_RESERVE_BYTES
from workstation.tui.i18n import Texts

GIB = 1024**3
DRAFT = {"mode": "draft", "draft_model": SMOLLM2, "draft_tokens": 6}


@pytest.fixture
def probe():  # noqa: ANN201
    yield set_probe
    set_probe(None)


def test_no_gpu_counts_the_draft_in_ram(smollm2_path: Path, gemma_path: Path, probe) -> None:
    probe(FakeGpuProbe())
    alone = plan_for_profile(make_profile(model=GEMMA, context=2048))
    paired = plan_for_profile(make_profile(model=GEMMA, context=2048, speculative=DRAFT))
    draft = read_model_info(smollm2_path)
    draft_kv = sum(kv_cache_per_layer(draft, 2048, "f16", "f16"))
    assert alone.draft is None
    assert paired.weights_bytes == alone.weights_bytes + draft.weights_bytes
    assert paired.kv_cache_bytes == alone.kv_cache_bytes + draft_kv
    assert paired.cpu_bytes > alone.cpu_bytes + draft.weights_bytes
    assert paired.draft is not None and paired.draft["gpu_layers"] == 0
    assert paired.fits and any("helper model for faster replies (draft)" in n for n in paired.notes)
    # a machine without a GPU is told of RAM alone, not of "0.0 GB on the GPU"
    # in F3's words ("a small helper model"; "memory" as the verdict before it says): it said "with
    # its draft model 8.8 GB in RAM"
    assert f"; with its small helper model it needs {human_bytes(paired.cpu_bytes)} of memory" in paired.verdict
    assert "draft" not in paired.verdict and "RAM" not in paired.verdict
    assert "GPU" not in paired.verdict
    # held to a memory in which the target fits alone, and the draft alone, but not the two
    # together: it does not fit, and says the helper model is why; with room for what the pair
    # must hold in RAM, to the byte, it fits (its weights, mapped from their files, page)
    pair = make_profile(model=GEMMA, context=2048, speculative=DRAFT)
    draft_resident = paired.resident_bytes - alone.resident_bytes
    assert 0 < draft_resident < alone.resident_bytes
    between = RAM_RESERVE_BYTES + alone.resident_bytes + draft_resident // 2
    assert plan_for_profile(make_profile(model=GEMMA, context=2048), ram_available=between).fits
    short = plan_for_profile(pair, ram_available=between)
    assert not short.fits and short.placement == "none" and short.paged_bytes == 0
    # the pair's memory, not the target's "runs on the CPU, but slowly: … more free memory makes it fast"
    assert short.verdict == (f"does not fit with its small helper model: together they need {human_bytes(paired.cpu_bytes)} "
                             f"of memory, and {human_bytes(between - RAM_RESERVE_BYTES)} is free for them"), short.verdict
    assert say(short.verdict_phrases, Texts("tr").get).startswith("küçük yardımcı modeliyle birlikte sığmıyor: ikisi ")
    # under a memory limit, the limit is why (as the target alone says it), not what "is free"
    limited = plan_for_profile(pair, ram_available=between, ram_limit=between - RAM_RESERVE_BYTES)
    assert not limited.fits and limited.verdict.endswith(
        f"the memory limit this program runs under leaves {human_bytes(between - RAM_RESERVE_BYTES)} for them"), limited.verdict
    assert "bellek sınırı onlara" in say(limited.verdict_phrases, Texts("tr").get)
    assert not plan_for_profile(pair, ram_available=RAM_RESERVE_BYTES + paired.resident_bytes - 1).fits
    just = plan_for_profile(pair, ram_available=RAM_RESERVE_BYTES + paired.resident_bytes)
    assert just.fits and just.paged_bytes == just.cpu_bytes - paired.resident_bytes
    # the speed line says what the pair reads from the disk (it said the model's own, "16 MB", or nothing,
    # beside a verdict of 1.6 GB)
    assert just.speed_note.endswith(f"; with all of it in memory: {human_bytes(just.paged_bytes)} read from the disk "
                                    "for every token is far slower"), just.speed_note
    roomy = plan_for_profile(pair, ram_available=RAM_RESERVE_BYTES + paired.cpu_bytes)
    assert roomy.fits and roomy.paged_bytes == 0 and roomy.ram_available == RAM_RESERVE_BYTES + paired.cpu_bytes
    assert "from the disk" not in roomy.speed_note + short.speed_note


def test_draft_goes_to_the_gpu_with_the_target(gemma_path: Path, smollm2_path: Path, probe) -> None:
    probe(FakeGpuProbe.of(("RTX 4060", 8, 7.5)))
    alone = plan_for_profile(make_profile(model=GEMMA, gpu_layers="auto"))
    paired = plan_for_profile(make_profile(model=GEMMA, gpu_layers="auto", speculative=DRAFT))
    assert alone.placement == paired.placement == "gpu"
    assert paired.draft is not None and paired.draft["gpu_layers"] == paired.draft["total_layers"]
    gpu_alone = next(d for d in alone.devices if d.kind == "gpu")
    gpu_paired = next(d for d in paired.devices if d.kind == "gpu")
    assert gpu_paired.need_bytes == gpu_alone.need_bytes + paired.draft["gpu_bytes"]
    assert gpu_paired.free_bytes == gpu_alone.free_bytes  # the card's real free memory is shown


def test_auto_layers_leave_room_for_the_draft(gemma_path: Path, smollm2_path: Path, probe) -> None:
    """A card on which the target alone fits entirely but not beside its draft: auto gives the
    target fewer layers once the draft is counted, and the pair still fits."""
    probe(FakeGpuProbe.of(("big", 80, 79)))
    alone = plan_for_profile(make_profile(model=GEMMA, gpu_layers="auto"))
    paired = plan_for_profile(make_profile(model=GEMMA, gpu_layers="auto", speculative=DRAFT))
    assert paired.draft is not None
    target_gpu = next(d for d in alone.devices if d.kind == "gpu").need_bytes
    total = 2 * GIB
    usable = target_gpu + paired.draft["gpu_bytes"] // 2
    free = usable + 512 * 1024**2 + int(0.03 * total)
    probe(FakeGpuProbe.of(("tight", total / GIB, free / GIB)))
    alone = plan_for_profile(make_profile(model=GEMMA, gpu_layers="auto"))
    paired = plan_for_profile(make_profile(model=GEMMA, gpu_layers="auto", speculative=DRAFT))
    assert alone.gpu_layers == alone.total_layers
    assert 0 < paired.gpu_layers < alone.gpu_layers
    assert paired.fits and paired.draft is not None and paired.draft["gpu_layers"] > 0
    # all the model's layers asked onto that card: they fit alone, not beside the draft, and the sentence
    # says so (it said the model's own "… is usable; set gpu_layers to auto", of a card it had more of)
    beside = plan_for_profile(make_profile(model=GEMMA, gpu_layers="all", speculative=DRAFT))
    assert plan_for_profile(make_profile(model=GEMMA, gpu_layers="all")).fits and not beside.fits
    assert re.fullmatch(rf"does not fit beside its small helper model: {alone.total_layers} layers on the GPU need "
                        r"\d+ MB of VRAM, and \d+ MB is usable once the helper model's 31 layers have \d+ MB; set "
                        rf"gpu_layers to auto \({paired.gpu_layers} layers fit\)", beside.verdict), beside.verdict
    assert say(beside.verdict_phrases, Texts("tr").get).startswith("küçük yardımcı modelinin yanına sığmıyor: ")
    # the draft alone asked onto a card without room for it (draft_gpu_layers: all): one sentence
    # says what does not fit and which setting to change (it said "does not fit with its small
    # helper model: " and then the target's own "runs on the CPU: needs …", which fits)
    for free, fewer in ((0.6, ""), (0.7, ", or to 20 or fewer")):
        probe(FakeGpuProbe.of(("tiny", 1, free)))
        crowded = plan_for_profile(make_profile(model=GEMMA, gpu_layers="auto",
                                                speculative={**DRAFT, "draft_gpu_layers": "all"}))
        assert not crowded.fits and re.fullmatch(
            r"does not fit: its small helper model's 31 layers on the GPU need \d+ MB of VRAM, \d+ MB is usable; "
            rf"set draft_gpu_layers to auto{fewer}", crowded.verdict), crowded.verdict
        turkish = say(crowded.verdict_phrases, Texts("tr").get)
        assert turkish.startswith("sığmıyor: küçük yardımcı modelin GPU üzerindeki 31 katmanı ") and \
            turkish.endswith("draft_gpu_layers'ı auto yapın" if not fewer else "auto ya da en çok 20 yapın"), turkish
        # the model asked onto the card too (gpu_layers: all, or a number): both, in one sentence, of the
        # whole card (it said the model's alone, "0 B is usable", and the draft's came after that fix)
        for layers, said in (("all", 19), (10, 10)):
            both = plan_for_profile(make_profile(model=GEMMA, gpu_layers=layers,
                                                 speculative={**DRAFT, "draft_gpu_layers": "all"}))
            assert not both.fits and re.fullmatch(
                rf"does not fit: {said} layers on the GPU need \d+ MB of VRAM and its small helper model's 31 layers "
                r"\d+ MB, \d+ MB is usable; set gpu_layers and draft_gpu_layers to auto", both.verdict), both.verdict
            turkish = say(both.verdict_phrases, Texts("tr").get)
            assert "küçük yardımcı modelin 31 katmanı da " in turkish and \
                turkish.endswith("; gpu_layers'ı ve draft_gpu_layers'ı auto yapın"), turkish
        assert plan_for_profile(make_profile(model=GEMMA, gpu_layers="auto", speculative={
            **DRAFT, "draft_gpu_layers": "auto"})).fits  # (as it says)
    fitting = make_profile(model=GEMMA, gpu_layers="auto", speculative={**DRAFT, "draft_gpu_layers": 20})
    assert plan_for_profile(fitting).fits  # (as many as it names)
    assert plan_for_profile(dataclasses.replace(fitting, speculative=dataclasses.replace(
        fitting.speculative, draft_gpu_layers="auto"))).fits


def test_fit_json_reports_the_draft(tmp_path: Path, smollm2_path: Path, probe,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.cli import main

    probe(FakeGpuProbe())
    path = tmp_path / "pair.yaml"
    path.write_text(yaml.safe_dump({"name": "pair", "model": SMOLLM2, "context": 2048,
                                    "speculative": DRAFT}), encoding="utf-8")
    assert main(["fit", "-p", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["draft"]["model"] == SMOLLM2
    assert data["weights_bytes"] == 2 * read_model_info(smollm2_path).weights_bytes
    assert main(["fit", "-p", str(path)]) == 0
    out = capsys.readouterr().out
    assert "helper model for faster replies (draft)" in out
    half = human_bytes(read_model_info(smollm2_path).weights_bytes)  # the totals say what of them is the draft's
    # in words first, the engineers' names in brackets ("KV cache: 1.6 GB (16,384 cells…)", "the draft model")
    assert f"  the model itself (weights): {human_bytes(data['weights_bytes'])}; its helper model (draft) takes {half} " \
           "of it\n" in out, out
    kv = out.split("  memory for the conversation (context): ")[1].splitlines()[0]
    assert kv.startswith(f"{human_bytes(data['kv_cache_bytes'])} for 2,048 tokens (KV cache); its helper model (draft)"), out
    assert "cells" not in out and "the draft model" not in out and "of f16 K/V" not in out, out
    assert "of context memory at full size (f16 K/V)" in out and "its context memory at full size (K/V f16/f16)" in out
    # a Q4_0 draft on the CPU: its repacked copy is in the total, and in the figures that add up to it
    path.write_text(yaml.safe_dump({"name": "pair", "model": SMOLLM2, "context": 2048, "speculative": {
        **DRAFT, "draft_model": str(requantized_copy(smollm2_path, "q4_0"))}}), encoding="utf-8")
    assert main(["fit", "-p", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sum(data[f"{part}_bytes"] for part in ("weights", "kv_cache", "compute", "repack")) == data["total_bytes"], data
    assert data["draft"]["repack_bytes"] == data["repack_bytes"], data  # (the target's Q4_1 is not repacked)


def test_missing_draft_file_is_named_not_counted(tmp_path: Path, smollm2_path: Path, probe) -> None:
    probe(FakeGpuProbe())
    missing = {"mode": "draft", "draft_model": str(tmp_path / "absent.gguf")}
    p = plan_for_profile(make_profile(speculative=missing))
    assert p.draft is None and p.weights_bytes == read_model_info(smollm2_path).weights_bytes
    assert any("not downloaded" in n for n in p.notes)


def test_fit_before_downloading_plans_from_the_published_shape(
        tmp_path: Path, smollm2_path: Path, probe, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`fit -p gpu-qwen3-8b` answers "will it fit" before a 5 GB download, from the catalog's
    published shape. The shape's plan is held to the file's: SmolLM2 planned with its file on
    disk and again with the file gone agree on K/V to the byte and on weights within 3%."""
    from workstation.cli import main

    probe(FakeGpuProbe.of(("RTX 4060 Ti", 16, 15.0)))
    on_disk = plan_for_profile(make_profile(model=SMOLLM2, context=4096, gpu_layers="auto"))
    monkeypatch.setenv("WORKSTATION_MODELS", str(tmp_path / "empty"))  # nothing downloaded
    shaped = plan_for_profile(make_profile(model=SMOLLM2, context=4096, gpu_layers="auto"), not_downloaded=True)
    assert shaped.kv_cache_bytes == on_disk.kv_cache_bytes and shaped.total_layers == on_disk.total_layers
    assert abs(shaped.weights_bytes - on_disk.weights_bytes) <= 0.03 * on_disk.weights_bytes
    assert shaped.notes[0].startswith(f"{SMOLLM2} is not downloaded yet: planned from its published shape")
    with pytest.raises(ModelFileError, match="not downloaded yet"):  # only fit asks for the shape
        plan_for_profile(make_profile(model=SMOLLM2, context=4096))

    assert main(["fit", "-p", "gpu-qwen3-8b", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["downloaded"] is False and data["fits"] and data["placement"] == "gpu"
    assert data["gpu_layers"] == data["total_layers"] == 37  # Qwen3 8B: 36 blocks + the output
    assert data["draft"]["model"] == "qwen3-0.6b-q4_k_m" and data["draft"]["gpu_layers"] == 29
    assert "models pull qwen3-8b-q4_k_m' downloads it, about 4.7 GB" in data["notes"][0]
    # the profile menu (F3) says the same before the download, and how to download
    from workstation.core.profile_lookup import load_profile
    from workstation.tui.integrations import fit_verdict

    verdict = fit_verdict(load_profile("gpu-qwen3-8b"))
    assert verdict and verdict.startswith("Not downloaded yet: F4, then p, downloads it. Once it is: fits entirely on the GPU")
    assert "; with its small helper model it needs " in verdict and " GB on the GPU and " in verdict
    turkish = fit_verdict(load_profile("gpu-qwen3-8b"), Texts("tr"))  # F3 in the Turkish UI
    assert turkish and turkish.startswith(
        "Henüz indirilmedi; indirmek için F4'e, ardından p'ye basın. İndirilince: tamamen GPU belleğine sığar")
    assert "; küçük yardımcı modeliyle birlikte GPU'da " in turkish and " GB ve " in turkish
    assert turkish.endswith(" MB bellek gerekir.")  # (its 620 MB in RAM, as hw says a size: it said "0,6 GB")
    # the same figures, written the Turkish way: 5,2 GB (a decimal comma), not 5.2
    english_figures = [n for n in verdict.split() if n[0].isdigit()]
    assert any("." in n for n in english_figures)
    assert [as_turkish(n) for n in english_figures] == [
        n for n in turkish.split() if n[0].isdigit()]
    probe(FakeGpuProbe.of(("RTX 3050", 6, 5.5)))  # too small for all of it: auto offloads part
    assert main(["fit", "-p", "gpu-qwen3-8b"]) == 0
    out = capsys.readouterr().out
    assert "not downloaded yet" in out and "(GPU layers):" in out and " of 37 " in out
    partial = fit_verdict(load_profile("gpu-qwen3-8b"), Texts("tr"))
    # (llama.cpp's count, the output layer one of them: as fit's "GPU layers" says it)
    assert partial and "37 katmanın " in partial and "kalanı CPU'da: çalışır ama daha yavaş" in partial
    # fit in Turkish says every sentence in Turkish: its notes were English (the model and its draft
    # not downloaded yet, the draft counted, gpu_layers asked of a PC with no GPU)
    probe(FakeGpuProbe())
    for name, draft in (("shaped", "qwen3-0.6b-q4_k_m"), ("absent", str(tmp_path / "absent.gguf"))):
        pair = tmp_path / f"{name}.yaml"
        pair.write_text(yaml.safe_dump({"name": name, "model": "qwen3-8b-q4_k_m", "context": 4096, "gpu_layers": "all",
                                        "speculative": {"mode": "draft", "draft_model": draft}}), encoding="utf-8")
        main(["fit", "-p", str(pair), "--lang", "tr"])
        out = capsys.readouterr().out
        assert "qwen3-8b-q4_k_m henüz indirilmedi" in out and "NVIDIA GPU bulunamadı" in out, out
        assert ("yardımcı model qwen3-0.6b-q4_k_m de hesaba katıldı" if name == "shaped" else
                "absent.gguf henüz indirilmedi, bu yüzden hesaba katılmadı") in out, out
        english = re.findall(r"\b(?:the|is|of|and|no|on|it|yet|counts|draft|downloads?|planned|found|layers|run)\b",
                             out.replace(str(tmp_path), ""))
        assert not english, (english, out)


@pytest.mark.parametrize("context", ["-5", "0", "1", "99999999"])
def test_fit_refuses_a_context_no_profile_may_have(context: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`fit --context -5` planned 0 cells and said the model fits (exit 0); 0 planned the
    profile's context, and 99999999 was planned though no profile may hold it."""
    with pytest.raises(SystemExit) as refused:
        main(["fit", "--context", context, "--json"])
    assert refused.value.code == 2
    assert f"--context: {context} is not a context; allowed values are 2 to 1,048,576 tokens" in capsys.readouterr().err


def test_fit_plans_for_the_context_asked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "--context", "2048", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["context"] == 2048
